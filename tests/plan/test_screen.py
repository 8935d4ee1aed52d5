"""The analytic screen: refusals with named reasons, the engine's own memory sizing honoured across the whole
default space, values that follow calc's roofline, and bindings that name the resource."""

from __future__ import annotations

import math

import pytest

from calc.plan import presets
from calc.plan.inputs import PlanRequest, Targets
from calc.plan.screen import BINDINGS, coefficients_of, max_model_len_of, scenario_of, screen
from calc.plan.search import screen_all
from calc.roofline import decode_step, mixed_step_s
from calc.sim.hardware import replica_hardware
from calc.sim.scenario import Scenario

DEFAULT_SPACES = {name: presets.request(name) for name in presets.NAMES}


@pytest.mark.parametrize("name", sorted(DEFAULT_SPACES))
def test_no_config_the_screen_passes_is_one_the_engine_would_refuse(name):
    """Every candidate of the preset's whole default space that the screen lets through starts in the engine:
    the simulator's replica (vLLM's memory sizing) holds at least one max_model_len request in whole blocks,
    and the scenario passes the engine's own checks; every refused one says why, naming a constraint."""
    request = DEFAULT_SPACES[name]
    rows = screen_all(request)
    passed = [r for r in rows if r.ok]
    assert passed and len(passed) < len(rows)
    for r in passed:
        scenario = scenario_of(request, r.candidate)
        hw = replica_hardware(scenario)
        assert hw.kv_cache_tokens >= max_model_len_of(request), r.candidate
        assert hw.kv_cache_tokens == r.kv_cache_tokens
        assert Scenario.from_dict(scenario.to_dict()) == scenario  # the engine's budget rules, checked again
        assert r.gpus >= r.replicas >= 1 and r.usd_per_hour > 0
    for r in rows:
        if not r.ok:
            assert r.reason and r.binding in BINDINGS, r


def test_screen_refuses_what_does_not_fit_and_what_the_simulator_cannot_run():
    request = PlanRequest(model="llama-3.1-405b", gpus=("h100-sxm-80gb",), weights=("bf16",))
    rows = screen_all(request)
    assert not any(r.ok for r in rows)
    assert {r.reason.split(":")[0] for r in rows} == {"topology"}  # PP across servers: named, not dropped
    small = [r for r in screen_all(PlanRequest(gpus=("h100-sxm-80gb",))) if dict(r.candidate)["tp"] == 1]
    assert small and all(not r.ok and r.binding in ("memory", "engine") for r in small)
    assert any("does not fit" in r.reason for r in small)


def test_screen_tpot_averages_decode_steps_and_steps_carrying_a_prompt():
    request = presets.request("lesson")
    base = tuple(presets.baseline("lesson").items())
    r = screen(request, base)
    coef = coefficients_of(request.model, "h100-sxm-80gb", 4, "bf16", "bf16", request.engine)
    batch = math.ceil(r.predicted["running"])
    context = 1024 + 256 // 2
    decode = decode_step(coef, batch=batch, context_tokens=context)["time_s"]
    mixed = mixed_step_s(coef, batch=batch, context_tokens=context, chunk_tokens=1024)  # one prompt per chunk step
    share = batch / 255  # prompts per step by Little's law: batch / (answer - 1)
    assert r.predicted["tpot_p50_s"] == pytest.approx(decode + share * (mixed - decode), rel=1e-9)
    assert decode < r.predicted["tpot_p50_s"] < mixed
    assert r.predicted["tpot_p99_s"] > r.predicted["tpot_p50_s"]  # the running count's Poisson tail
    assert r.predicted["tpot_p99_s"] <= request.targets.tpot_p99_s
    # one replica fewer would overload it: the count is the fewest that meets the targets on the screen
    assert request.peak_rate_per_s / (r.replicas - 1) > r.rate_max_per_s >= request.peak_rate_per_s / r.replicas


def test_tighter_tpot_needs_more_replicas_and_fp8_needs_fewer_gpus():
    loose = presets.request("lesson")
    tight = presets.request("lesson", targets={"ttft_p99_s": 5.0, "tpot_p99_s": 0.03})
    base = tuple(presets.baseline("lesson").items())
    assert screen(tight, base).replicas > screen(loose, base).replicas
    fp8 = tuple((k, "fp8" if k == "weights" else (2 if k == "tp" else v)) for k, v in base)
    assert screen(loose, fp8).gpus < screen(loose, base).gpus


def test_interconnect_binds_tensor_parallelism_over_pcie_not_over_nvlink():
    targets = Targets(ttft_p99_s=5, tpot_p99_s=0.05)
    pcie = PlanRequest(gpus=("h100-pcie-80gb",), prices_usd_per_gpu_hour=(("h100-pcie-80gb", 2.0),),
                       peak_rate_per_s=10, targets=targets)
    nvlink = PlanRequest(gpus=("h100-sxm-80gb",), peak_rate_per_s=10, targets=targets)
    over_pcie = [r for r in screen_all(pcie) if r.ok and dict(r.candidate)["tp"] == 8]
    over_nvlink = [r for r in screen_all(nvlink) if r.ok and dict(r.candidate)["tp"] <= 4]
    assert any(r.binding == "interconnect" for r in over_pcie)
    assert not any(r.binding == "interconnect" for r in over_nvlink)


def test_gpu_budget_refuses_fleets_that_need_more():
    request = presets.request("lesson", gpu_budget=6)
    rows = screen_all(request)
    assert all(r.gpus <= 6 for r in rows if r.ok)
    assert any(r.binding == "budget" and "budget" in r.reason for r in rows)


# The screen's speed (issue 34: the first answer within 2 s) comes from work shared between candidates of one
# request (scenarios, KV sizings and their refusals, step prices, the pools' per-replica rates) and one trick,
# the Erlang C recursion cut short. Each is checked against its plain twin: the same answers, to the last bit.

@pytest.mark.parametrize("servers, load", [(1, 0.5), (8, 7.5), (8, 0.01), (64, 3.0), (64, 63.9), (256, 20.0),
                                            (256, 255.999), (512, 1.5), (512, 300.0), (512, 511.0), (4, 4.0)])
def test_erlang_c_cut_short_is_erlang_c_or_below_the_threshold(servers, load):
    from calc.plan.screen import _erlang_c, _erlang_c_below

    exact = _erlang_c(servers, load)
    for threshold in (0.01, 0.5):
        fast = _erlang_c_below(servers, load, threshold)
        if exact >= threshold:
            assert fast == exact
        else:
            assert fast < threshold and (fast == exact or fast >= exact)


def test_erlang_c_cut_short_agrees_on_a_sweep():
    from calc.plan.screen import _erlang_c, _erlang_c_below

    for servers in (1, 2, 3, 7, 64, 128, 256, 512):
        for step in range(1, 200):
            load = servers * step / 150  # past rho = 1 too
            exact, fast = _erlang_c(servers, load), _erlang_c_below(servers, load, 0.01)
            assert (exact <= 0.01) == (fast <= 0.01) and (exact <= 0.5) == (fast <= 0.5), (servers, load)
            assert fast == exact or fast <= 0.01


@pytest.mark.parametrize("name", ["lesson", "long-document"])
def test_the_fast_screen_is_the_plain_screen(name, monkeypatch):
    """The whole default space screened with the shared work and the trick, and with neither: every result equal
    (a fresh request object per candidate starts the shared values afresh; Erlang C in full)."""
    import dataclasses

    from calc.plan import screen as screen_module
    from calc.plan.space import candidates

    request = DEFAULT_SPACES[name]
    fast = [screen(request, c) for c in candidates(request)]
    monkeypatch.setattr(screen_module, "_erlang_c_below", lambda servers, load, threshold:
                        screen_module._erlang_c(servers, load))
    plain = [screen(dataclasses.replace(request), c) for c in candidates(request)]
    assert len(fast) == len(plain) > 1000
    assert fast == plain
