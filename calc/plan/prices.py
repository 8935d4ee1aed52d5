"""What one GPU-hour costs the plan: the reader's price, an owned GPU's, or the catalog's dated listing.

In that order: a price given in the request (``prices_usd_per_gpu_hour``), an owned GPU
(:class:`calc.plan.inputs.OwnedGPU`: purchase over lifetime plus power x PUE), else the GPU catalog's
dated, sourced listing (:mod:`calc.catalog.gpus`). A GPU with none of them cannot be priced: the planner
says so and leaves it out, never guessing a figure.

>>> from calc.plan.inputs import PlanRequest
>>> gpu_hour_price(PlanRequest(), "h100-sxm-80gb")["usd_per_gpu_hour"]
3.78
>>> gpu_hour_price(PlanRequest(), "h200") is None
True
"""

from __future__ import annotations

from calc.catalog import get_gpu

__all__ = ["gpu_hour_price"]


def gpu_hour_price(request, gpu_key: str) -> dict | None:
    """``{"usd_per_gpu_hour", "basis", "source", "date"}`` for ``gpu_key`` under ``request``, or None.

    ``basis`` is "given", "owned" or "listed". Sources: the request; :class:`calc.plan.inputs.OwnedGPU`;
    the catalog's ``price_source`` and ``price_date``.

    >>> from calc.plan.inputs import PlanRequest, OwnedGPU
    >>> r = PlanRequest(prices_usd_per_gpu_hour=(("h200", 4.5),))
    >>> gpu_hour_price(r, "h200")["basis"], gpu_hour_price(r, "h200")["usd_per_gpu_hour"]
    ('given', 4.5)
    >>> owned = PlanRequest(owned=(("h100-sxm-80gb", OwnedGPU(30000, 4, 700, 0.1)),))
    >>> round(gpu_hour_price(owned, "h100-sxm-80gb")["usd_per_gpu_hour"], 4)
    0.9668
    """
    given = request.price_overrides()
    if gpu_key in given:
        return {"usd_per_gpu_hour": given[gpu_key], "basis": "given", "source": "given in the request",
                "date": None}
    owned = request.owned_gpus()
    if gpu_key in owned:
        o = owned[gpu_key]
        return {"usd_per_gpu_hour": o.usd_per_hour(), "basis": "owned",
                "source": (f"owned: ${o.purchase_usd:,.0f} over {o.lifetime_years:g} years + {o.power_w:g} W x PUE "
                           f"{o.pue:g} at ${o.usd_per_kwh:g}/kWh"), "date": None}
    gpu = get_gpu(gpu_key)
    if gpu.price_usd_per_hour is None:
        return None
    return {"usd_per_gpu_hour": gpu.price_usd_per_hour, "basis": "listed", "source": gpu.price_source,
            "date": gpu.price_date}
