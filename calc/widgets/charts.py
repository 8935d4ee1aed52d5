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
            "legend": {"orientation": "h", "y": -0.25},
            "margin": {"l": 60, "r": 20, "t": 50, "b": 40},
            "height": 360,
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
