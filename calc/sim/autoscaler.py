"""A threshold autoscaler for a pool of replicas, on the signal you choose.

Every ``interval_s`` the autoscaler reads one signal averaged over the last
interval and over the pool's serving replicas, then:

* above ``scale_up_above``: asks for ``step`` more replicas (up to ``max_replicas``);
* below ``scale_down_below``: removes ``step`` (down to ``min_replicas``);
* otherwise, or within ``cooldown_s`` of its last change, does nothing.

The signals are what a serving dashboard offers:

* ``"gpu_util"``: GPU-Util as ``nvidia-smi``/DCGM report it, the share of time
  a kernel runs. An LLM server runs a decode step whenever any request is in
  flight, so this reads near 1 at a small fraction of the replica's capacity:
  the autoscaler scales up and never finds a reason to scale down (step 14);
* ``"queue_depth"``: requests waiting for admission per replica (vLLM's
  ``num_requests_waiting``); zero until the replica is really full (step 15);
* ``"kv_use"``: KV cache use per replica (vLLM's ``gpu_cache_usage_perc``).

A new replica serves only after the scale-up delay, ``pod start + weight bytes
/ load bandwidth`` (:func:`calc.autoscale.scale_up_delay_s`); it is paid for
from the moment it is requested. A replica scaled down stops receiving
requests, finishes those it holds, then goes (a replica still starting is
cancelled first).
Sources: Kubernetes Horizontal Pod Autoscaler (sync period 15 s by default,
a stabilization window against flapping, pods not yet ready left out of the
metric); KEDA's Prometheus scaler (any gauge, e.g. vLLM's
``vllm:num_requests_waiting``); NVIDIA NVML ``nvmlUtilization_t.gpu`` ("percent
of time over the past sample period during which one or more kernels was
executing"); the lesson's steps 14 and 15 (seed ``000_783e2c6cc1bfcb77.txt``).

>>> cfg = AutoscalerConfig.from_dict({"signal": "queue_depth", "scale_up_above": 4, "scale_down_below": 0.5,
...                                    "min_replicas": 1, "max_replicas": 4, "cooldown_s": 60})
>>> scaler = Autoscaler(cfg)
>>> scaler.decide(signal=9.0, now_ns=0, current=1)          # queue of 9 per replica: one more
1
>>> scaler.decide(signal=9.0, now_ns=30 * 10**9, current=2)  # cooling down
0
>>> scaler.decide(signal=0.1, now_ns=90 * 10**9, current=2)  # idle: one fewer
-1
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from calc.autoscale import scale_up_delay_s
from calc.errors import CalcError, check_choice, check_range
from calc.units import NS_PER_S

__all__ = ["SIGNALS", "DEFAULT_THRESHOLDS", "AutoscalerConfig", "Autoscaler", "scale_up_delay_ns"]

SIGNALS = ("gpu_util", "queue_depth", "kv_use")

# Defaults per signal: (scale up above, scale down below). GPU-Util: the
# 80 % / 30 % pair of a typical utilization-target autoscaler (HPA's resource
# target is commonly set near 80 %); queue depth: more than 4 waiting per
# replica means latency is already queueing time, under 0.5 means the queue is
# empty most of the time; KV use: 85 % is where vLLM starts to preempt under a
# burst, 30 % leaves two replicas' traffic room in one. Assumptions, shown as such.
DEFAULT_THRESHOLDS = {"gpu_util": (0.8, 0.3), "queue_depth": (4.0, 0.5), "kv_use": (0.85, 0.3)}

_KEYS = ("signal", "scale_up_above", "scale_down_below", "interval_s", "cooldown_s", "min_replicas",
         "max_replicas", "step", "pod_start_s", "load_bytes_per_s")


@dataclass(frozen=True)
class AutoscalerConfig:
    """How a pool scales: the signal, its thresholds, timing and bounds, and what a new replica costs in time.

    ``load_bytes_per_s`` is the rate at which each GPU reads its share of the
    weights (its tensor-parallel shard), all GPUs of a replica in parallel;
    the default 2 GB/s is a network volume or object store read by one pod
    (an assumption: local NVMe reads faster, a cold image pull slower).
    ``pod_start_s`` (60 s by default) is scheduling, image start and engine
    start-up, CUDA graph capture included. ``interval_s`` 15 s is the HPA's
    default sync period; ``cooldown_s`` 60 s stands for its stabilization.

    >>> AutoscalerConfig().signal, AutoscalerConfig().scale_up_above
    ('gpu_util', 0.8)
    >>> AutoscalerConfig.from_dict({"signal": "kv_use"}).scale_down_below
    0.3
    >>> AutoscalerConfig.from_dict({"min_replicas": 3, "max_replicas": 2})
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: autoscaler.max_replicas must be at least min_replicas (3); got 2
    """

    signal: str = "gpu_util"
    scale_up_above: float = 0.8
    scale_down_below: float = 0.3
    interval_s: float = 15.0
    cooldown_s: float = 60.0
    min_replicas: int = 1
    max_replicas: int = 8
    step: int = 1
    pod_start_s: float = 60.0
    load_bytes_per_s: float = 2e9

    @classmethod
    def from_dict(cls, data: dict) -> "AutoscalerConfig":
        """A validated config from JSON-like data; thresholds default per signal (:data:`DEFAULT_THRESHOLDS`)."""
        if not isinstance(data, dict):
            raise CalcError(f"autoscaler must be a JSON object; got {type(data).__name__}", "autoscaler")
        for key in data:
            if key not in _KEYS:
                raise CalcError(f"unknown key {key!r} in autoscaler; allowed: {', '.join(sorted(_KEYS))}", key)
        d = cls()
        signal = check_choice("autoscaler.signal", data.get("signal", d.signal), SIGNALS)
        up_default, down_default = DEFAULT_THRESHOLDS[signal]
        high = 1.0 if signal != "queue_depth" else 1e6
        up = check_range("autoscaler.scale_up_above", data.get("scale_up_above", up_default), 0.0, high)
        down = check_range("autoscaler.scale_down_below", data.get("scale_down_below", down_default), 0.0, high)
        if down >= up:
            raise CalcError(f"autoscaler.scale_down_below must be below scale_up_above ({up}); got {down}",
                            "autoscaler.scale_down_below")
        lo = check_range("autoscaler.min_replicas", data.get("min_replicas", d.min_replicas), 1, 1000, integer=True)
        hi = check_range("autoscaler.max_replicas", data.get("max_replicas", d.max_replicas), 1, 1000, integer=True)
        if hi < lo:
            raise CalcError(f"autoscaler.max_replicas must be at least min_replicas ({lo}); got {hi}",
                            "autoscaler.max_replicas")
        return cls(
            signal=signal, scale_up_above=up, scale_down_below=down,
            interval_s=check_range("autoscaler.interval_s", data.get("interval_s", d.interval_s), 0.1, 86400.0),
            cooldown_s=check_range("autoscaler.cooldown_s", data.get("cooldown_s", d.cooldown_s), 0.0, 86400.0),
            min_replicas=lo, max_replicas=hi,
            step=check_range("autoscaler.step", data.get("step", d.step), 1, 1000, integer=True),
            pod_start_s=check_range("autoscaler.pod_start_s", data.get("pod_start_s", d.pod_start_s), 0.0, 86400.0),
            load_bytes_per_s=check_range("autoscaler.load_bytes_per_s",
                                         data.get("load_bytes_per_s", d.load_bytes_per_s), 1e6, 1e13),
        )

    def to_dict(self) -> dict:
        """JSON-ready data (every key)."""
        return asdict(self)


def scale_up_delay_ns(config: AutoscalerConfig, weights_bytes_per_gpu: float) -> int:
    """Nanoseconds from "scale up" to serving: pod start + one GPU's weight shard / load bandwidth.

    The GPUs of a tensor-parallel replica load their shards at the same time,
    so the replica waits for one shard. Source: :func:`calc.autoscale.scale_up_delay_s`
    (the lesson's step 15).

    >>> scale_up_delay_ns(AutoscalerConfig(), 35.3e9) / 10**9    # 70B bf16 on 4 GPUs: 60 s + 35.3 GB / 2 GB/s
    77.65
    """
    seconds = scale_up_delay_s(pod_start_s=config.pod_start_s, weights_bytes=weights_bytes_per_gpu,
                               load_bytes_per_s=config.load_bytes_per_s)
    return round(seconds * NS_PER_S)


class Autoscaler:
    """The decision rule of :class:`AutoscalerConfig`, with its cooldown clock.

    ``decide(signal, now_ns, current)`` returns the change in replicas (0, or
    ``+-step`` clipped to the bounds) given the signal's value and the replicas
    the pool has now (serving and starting, not draining); any change starts
    the cooldown. ``history`` keeps every decision that changed something.
    """

    __slots__ = ("config", "last_change_ns", "history")

    def __init__(self, config: AutoscalerConfig):
        self.config = config
        self.last_change_ns = None
        self.history: list[tuple] = []  # (t_ns, signal, from, to)

    def decide(self, signal: float, now_ns: int, current: int) -> int:
        """The replica change to make now (positive: add; negative: remove; 0: hold).

        >>> a = Autoscaler(AutoscalerConfig(min_replicas=2, max_replicas=3, cooldown_s=0))
        >>> a.decide(0.99, 0, 3), a.decide(0.1, 1, 2), a.decide(0.1, 2, 3)
        (0, 0, -1)
        """
        cfg = self.config
        if self.last_change_ns is not None and now_ns - self.last_change_ns < round(cfg.cooldown_s * NS_PER_S):
            return 0
        if signal > cfg.scale_up_above:
            target = min(cfg.max_replicas, current + cfg.step)
        elif signal < cfg.scale_down_below:
            target = max(cfg.min_replicas, current - cfg.step)
        else:
            target = current
        if target < cfg.min_replicas:  # a pool below its floor (never at start) is brought back up
            target = cfg.min_replicas
        delta = target - current
        if delta:
            self.last_change_ns = now_ns
            self.history.append((now_ns, signal, current, target))
        return delta
