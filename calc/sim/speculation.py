"""Speculative decoding in the simulator: the engine's pieces and the load at which step 10 breaks.

The pieces the engine prices a speculative step with (tokens per step, the cost
of a step, the draft bound to the replica) live in
:mod:`calc.sim.speculative_step`, which the engine and the fleet import; they
are re-exported here. This module adds what runs the simulator:
:func:`healthy_rate_without_speculation`, the load step 10 runs its break at.
Keeping the two apart keeps the engine from importing the simulator that
imports it (tests/sim/test_imports.py).

>>> from calc.speculative import SpeculationConfig
>>> advance_ticks(SpeculationConfig(acceptance=0.7, k=3, draft_cost_ratio=0.1, source="example")) / TICKS
2.5330047607421875
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.sim.scheduler import TICKS
from calc.sim.speculative_step import (EAGLE_LIKE, SpeculationConfig, advance_ticks, bound_speculation,
                                       speculative_step_time_s, tokens_per_decode)

__all__ = ["EAGLE_LIKE", "SpeculationConfig", "advance_ticks", "tokens_per_decode", "speculative_step_time_s",
           "bound_speculation", "TTFT_SLO_S", "healthy_rate_without_speculation"]


#: The p99 time-to-first-token objective a chat replica is held to on step 10 (an assumption of the lesson: a
#: first token within a second, as interactive chat services commonly target).
TTFT_SLO_S = 1.0


def healthy_rate_without_speculation(scenario: dict, *, slo_s: float = TTFT_SLO_S, resolution_per_s: float = 1.0,
                                     max_rate_per_s: float = 200.0) -> float:
    """The highest arrival rate (a multiple of ``resolution_per_s``) at which ``scenario`` without speculation meets the SLO.

    ``scenario`` is scenario data (a dict, as :func:`calc.sim_views.scenario_for` gives); its p99 TTFT is
    simulated with speculation off, by bisection over the rate (p99 TTFT grows with the load). Step 10 runs
    its break at this rate, so the arm without speculation is healthy there whatever the step costs are.
    Source: :func:`calc.sim.fleet.simulate_fleet`.

    >>> from calc.sim_views import scenario_for
    >>> rate = healthy_rate_without_speculation(scenario_for("step10-speculation-at-saturation"))
    >>> rate == float(scenario_for("step10-speculation-at-saturation")["workload"]["rate_per_s"])
    True
    """
    from calc.errors import check_range
    from calc.sim.fleet import simulate_fleet

    slo_s = check_range("slo_s", slo_s, 0.001, 3600.0)
    step = check_range("resolution_per_s", resolution_per_s, 0.01, 100.0)
    top = int(check_range("max_rate_per_s", max_rate_per_s, step, 1e6) // step)

    def healthy(units: int) -> bool:
        data = {**scenario, "speculation": None, "workload": {**scenario.get("workload", {}), "rate_per_s": units * step}}
        return simulate_fleet(data).summary["ttft_p99_s"] <= slo_s

    if not healthy(1):
        raise CalcError(f"slo_s: the replica misses a p99 TTFT of {slo_s:g} s even at {step:g} request/s; allowed: a "
                        f"looser SLO or a smaller resolution_per_s", "slo_s")
    low, high = 1, top + 1  # healthy(low) holds; high is treated as unhealthy
    while high - low > 1:
        mid = (low + high) // 2
        if healthy(mid):
            low = mid
        else:
            high = mid
    return round(low * step, 6)
