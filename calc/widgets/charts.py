"""Plotly figure dicts, built by hand from plain lists so that the browser needs no Python plotly.

The page draws them with Plotly.js; the build embeds them as JSON beside each
chart. Every figure also carries a ``summary``: the numbers in words, shown under
the chart as its text alternative.

>>> figure = line_chart("KV per request", "context (tokens)", "GB",
...                     {"GQA": ([1000, 2000], [0.13, 0.26])})
>>> figure["data"][0]["name"], figure["layout"]["xaxis"]["title"]["text"]
('GQA', 'context (tokens)')
"""

from __future__ import annotations

from calc.units import round_sig

# Colour-blind-safe (Okabe-Ito), readable on light and dark backgrounds.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999")


def _axis(title: str, log: bool = False) -> dict:
    axis = {"title": {"text": title}, "automargin": True}
    if log:
        axis["type"] = "log"
    return axis


def line_chart(title: str, x_title: str, y_title: str, series: dict[str, tuple[list, list]], *,
               log_x: bool = False, log_y: bool = False, summary: str = "", markers: bool = False) -> dict:
    """A line chart with one trace per named (x, y) series."""
    data = []
    for index, (name, (xs, ys)) in enumerate(series.items()):
        data.append({
            "type": "scatter", "mode": "lines+markers" if markers else "lines", "name": name,
            "x": [round_sig(float(x), 6) for x in xs], "y": [round_sig(float(y), 6) for y in ys],
            "line": {"color": PALETTE[index % len(PALETTE)], "width": 2},
        })
    return {
        "data": data,
        "layout": {
            "title": {"text": title, "font": {"size": 15}},
            "xaxis": _axis(x_title, log_x), "yaxis": _axis(y_title, log_y),
            "legend": {"orientation": "h", "y": -0.3, "yanchor": "top", "x": 0},
            "margin": {"l": 60, "r": 20, "t": 50, "b": 60},
            "height": 380,
        },
        "summary": summary,
    }


def bar_chart(title: str, categories: list[str], y_title: str, stacks: dict[str, list[float]], *,
              summary: str = "", horizontal: bool = False) -> dict:
    """A stacked bar chart: one trace per stack layer, one bar per category."""
    data = []
    for index, (name, values) in enumerate(stacks.items()):
        values = [round_sig(float(v), 6) for v in values]
        trace = {"type": "bar", "name": name, "marker": {"color": PALETTE[index % len(PALETTE)]}}
        trace.update({"y": categories, "x": values, "orientation": "h"} if horizontal else {"x": categories, "y": values})
        data.append(trace)
    value_axis, category_axis = ("xaxis", "yaxis") if horizontal else ("yaxis", "xaxis")
    return {
        "data": data,
        "layout": {
            "title": {"text": title, "font": {"size": 15}},
            "barmode": "stack",
            value_axis: _axis(y_title),
            category_axis: {"automargin": True},
            "legend": {"orientation": "h", "y": -0.25},
            "margin": {"l": 60, "r": 20, "t": 50, "b": 40},
            "height": 360,
        },
        "summary": summary,
    }


def scatter_chart(title: str, x_title: str, y_title: str, series: dict[str, dict], *, log_x: bool = False,
                  log_y: bool = False, diagonal: bool = False, summary: str = "") -> dict:
    """Points, one trace per named series; optionally the line y = x across the data's range.

    Each series is ``{"x": [...], "y": [...], "text": [...]}`` (``text`` is the hover label of each
    point) with an optional ``"symbol"`` (a Plotly marker symbol, e.g. ``"diamond-open"``). The
    diagonal is the "prediction = measurement" line of an accuracy chart, drawn grey and dashed.

    >>> fig = scatter_chart("Predicted against measured", "measured", "predicted",
    ...                     {"KV": {"x": [1, 10], "y": [1.1, 9.0], "text": ["a", "b"]}}, log_x=True, log_y=True,
    ...                     diagonal=True)
    >>> [t["name"] for t in fig["data"]], fig["data"][1]["x"], fig["layout"]["xaxis"]["type"]
    (['KV', 'prediction = measurement'], [1.0, 10.0], 'log')
    """
    data = []
    lows, highs = [], []
    for index, (name, points) in enumerate(series.items()):
        xs = [round_sig(float(x), 6) for x in points["x"]]
        ys = [round_sig(float(y), 6) for y in points["y"]]
        trace = {
            "type": "scatter", "mode": "markers", "name": name, "x": xs, "y": ys,
            "marker": {"color": PALETTE[index % len(PALETTE)], "size": 9,
                       "symbol": points.get("symbol", "circle"), "line": {"width": 1}},
        }
        if points.get("text"):
            trace["text"] = [str(t) for t in points["text"]]
            trace["hovertemplate"] = "%{text}<br>measured %{x:.4g}, predicted %{y:.4g}<extra></extra>"
        data.append(trace)
        values = [v for v in xs + ys if v > 0 or not (log_x or log_y)]
        if values:
            lows.append(min(values))
            highs.append(max(values))
    if diagonal and lows:
        low, high = min(lows), max(highs)
        data.append({"type": "scatter", "mode": "lines", "name": "prediction = measurement",
                     "x": [low, high], "y": [low, high], "hoverinfo": "skip",
                     "line": {"color": "#999999", "width": 1.5, "dash": "dash"}})
    return {
        "data": data,
        "layout": {
            "title": {"text": title, "font": {"size": 15}},
            "xaxis": _axis(x_title, log_x), "yaxis": _axis(y_title, log_y),
            "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.26, "yanchor": "top"},
            "margin": {"l": 60, "r": 20, "t": 50, "b": 190},
            "height": 560,
        },
        "summary": summary,
    }


def roofline_chart(title: str, peak_flops_per_s: float, peak_bytes_per_s: float, points: list[dict], *,
                   achieved: tuple[float, float] | None = None, summary: str = "") -> dict:
    """A log-log roofline: attainable FLOP/s against arithmetic intensity, with kernels as points.

    The roof is ``min(peak FLOP/s, intensity x peak bandwidth)``: a bandwidth slope
    up to the ridge point (peak FLOP/s / peak bytes/s), flat beyond. ``achieved``
    (compute, memory efficiency) adds the same roof scaled by those factors, dashed.
    Each point is ``{"name", "x" (FLOP/byte), "y" (FLOP/s), "symbol"?, "text"?}``; the
    y axis is in TFLOP/s. Source: Williams, Waterman and Patterson, "Roofline: an
    insightful visual performance model", CACM 2009.

    >>> fig = roofline_chart("H100", 989e12, 3.35e12, [{"name": "decode", "x": 1.0, "y": 2.5e12}])
    >>> [t["name"] for t in fig["data"]], fig["data"][0]["x"][1], fig["data"][0]["y"][1]
    (['roof (datasheet)', 'decode'], 295.224, 989.0)
    """
    import math

    ridge = peak_flops_per_s / peak_bytes_per_s
    xs = [p["x"] for p in points if p["x"] > 0]
    low = min([ridge / 1000.0] + [x / 3.0 for x in xs])
    high = max([ridge * 20.0] + [x * 3.0 for x in xs])

    def roof(flops: float, bandwidth: float) -> tuple[list, list]:
        knee = flops / bandwidth
        return ([round_sig(low, 6), round_sig(knee, 6), round_sig(high, 6)],
                [round_sig(low * bandwidth / 1e12, 6), round_sig(flops / 1e12, 6), round_sig(flops / 1e12, 6)])

    x, y = roof(peak_flops_per_s, peak_bytes_per_s)
    data = [{"type": "scatter", "mode": "lines", "name": "roof (datasheet)", "x": x, "y": y,
             "line": {"color": "#757575", "width": 2.5}, "hoverinfo": "skip"}]
    if achieved:
        compute, memory = achieved
        x, y = roof(peak_flops_per_s * compute, peak_bytes_per_s * memory)
        data.append({"type": "scatter", "mode": "lines", "name": "roof at achieved efficiency", "x": x, "y": y,
                     "line": {"color": "#757575", "width": 1.5, "dash": "dash"}, "hoverinfo": "skip"})
    for index, point in enumerate(points):
        trace = {"type": "scatter", "mode": "markers", "name": point["name"],
                 "x": [round_sig(float(point["x"]), 6)], "y": [round_sig(float(point["y"]) / 1e12, 6)],
                 "marker": {"color": PALETTE[index % len(PALETTE)], "size": 13,
                            "symbol": point.get("symbol", "circle"), "line": {"width": 1.5}}}
        trace["hovertemplate"] = (point.get("text") or point["name"]) + \
            "<br>%{x:.3~r} FLOP/byte, %{y:.3~r} TFLOP/s<extra></extra>"
        data.append(trace)
    r = round_sig(ridge, 6)
    return {
        "data": data,
        "layout": {
            "title": {"text": title, "font": {"size": 15}},
            "xaxis": {**_axis("intensity (FLOP per HBM byte)", True), "dtick": 1},
            "yaxis": {**_axis("TFLOP/s per GPU", True), "dtick": 1},
            # On a log axis Plotly.js takes a shape's x in data units and an annotation's x in log10 units.
            "shapes": [{"type": "line", "x0": r, "x1": r, "yref": "paper", "y0": 0, "y1": 1,
                        "line": {"dash": "dot", "width": 1.5, "color": "#9e9e9e"}}],
            "annotations": [{"x": round_sig(math.log10(r), 6), "y": 0.02, "yref": "paper", "xanchor": "left",
                             "yanchor": "bottom", "showarrow": False, "font": {"size": 11},
                             "text": f" ridge {r:,.0f} FLOP/B"}],
            "legend": {"orientation": "h", "y": -0.3, "yanchor": "top", "x": 0},
            "margin": {"l": 60, "r": 20, "t": 50, "b": 60},
            "height": 480,
        },
        "summary": summary,
    }
