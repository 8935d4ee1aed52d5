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
