"""A small SVG chart: axes with round ticks, steps (plain or hatched), lines that break at NaN,
points of any size (circle, triangles, cross, dash), vertical segments, bands (vertical and
horizontal, open on either side), reference lines, integer ticks for counts,
horizontal bars and a legend below the axes — what the report's plots draw, written as text in a
few milliseconds (matplotlib took ~0.1 s a figure: most of the checker's output time on a history
of many runs).

The text is deterministic (no dates, no random ids): the ids a page needs (clip path, hatch
pattern) come from the chart's title, so each plot of a report has its own. Marks carry a
``class`` (``band``, ``points widened``, ``lost`` …) so that tests can find them.
"""

from __future__ import annotations

import math
from html import escape

#: Matplotlib's "tab10" colours (its default cycle), by name, so the plots keep their look.
COLOURS = {"tab:blue": "#1f77b4", "tab:orange": "#ff7f0e", "tab:green": "#2ca02c", "tab:red": "#d62728",
           "tab:purple": "#9467bd", "tab:brown": "#8c564b", "tab:pink": "#e377c2", "tab:gray": "#7f7f7f",
           "tab:olive": "#bcbd22", "tab:cyan": "#17becf", "black": "#000000", "red": "#ff0000"}
TAB10 = [COLOURS[c] for c in COLOURS if c.startswith("tab:")]
#: Matplotlib's "tab20": each tab10 colour and a light one, for more than ten series (delay levels).
TAB20 = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd", "#c5b0d5",
         "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5"]

PX_PER_PT = 96 / 72
LEGEND_FONT = 9  # px
_CHAR, _ROW, _HANDLE = LEGEND_FONT * 0.62, LEGEND_FONT * 1.9, 34  # px: a character, a legend row, handle and gap
_LONG = 14  # legend labels longer than this get rows of their own


def _rgb(name: str) -> str:
    return COLOURS.get(name, name)


def palette(n: int) -> list[str]:
    """``n`` colours, distinct up to twenty (tab10, then tab20), as the series of one plot."""
    table = TAB20 if n > 10 else TAB10
    return [table[i % len(table)] for i in range(n)]


def marker_radius(area_pt2: float) -> float:
    """The radius in px of a marker of matplotlib's scatter size ``s`` (an area in pt²)."""
    return math.sqrt(area_pt2) / 2 * PX_PER_PT


def nice_ticks(lo: float, hi: float, most: int = 8, integer: bool = False) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten; ``integer``:
    whole numbers only (a count's axis: no tick at 0.2 attempts)."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / most
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if integer:
        step = max(1, round(step))
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _fmt(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e6 else f"{v:.3g}"


def _finite(values) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def marker(shape: str, x: float, y: float, r: float, fill: str, edge: str | None = None, edge_width: float = 0,
           opacity: float | None = None) -> str:
    """One marker centred on (x, y) px: ``o`` circle, ``^`` triangle (``v`` pointing down), ``X`` cross, ``_`` dash (2r
    long, ``edge_width`` thick), ``.`` dot."""
    op = f" opacity='{opacity}'" if opacity is not None else ""
    stroke = f" stroke='{edge}' stroke-width='{edge_width:g}'" if edge else ""
    if shape == "^":
        return (f"<polygon points='{x:.1f},{y - r:.1f} {x - r * 0.87:.1f},{y + r / 2:.1f} {x + r * 0.87:.1f},{y + r / 2:.1f}' "
                f"fill='{fill}'{stroke}{op}/>")
    if shape == "v":
        return (f"<polygon points='{x:.1f},{y + r:.1f} {x - r * 0.87:.1f},{y - r / 2:.1f} {x + r * 0.87:.1f},{y - r / 2:.1f}' "
                f"fill='{fill}'{stroke}{op}/>")
    if shape == "X":
        return (f"<path d='M{x - r:.1f},{y - r:.1f}L{x + r:.1f},{y + r:.1f}M{x - r:.1f},{y + r:.1f}L{x + r:.1f},{y - r:.1f}' "
                f"stroke='{fill}' stroke-width='{max(r * 0.6, 1.5):.1f}'{op}/>")
    if shape == "_":
        return f"<line x1='{x - r:.1f}' x2='{x + r:.1f}' y1='{y:.1f}' y2='{y:.1f}' stroke='{fill}' stroke-width='{edge_width:g}'{op}/>"
    return f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{r if shape != '.' else min(r, 2):.1f}' fill='{fill}'{stroke}{op}/>"


class Chart:
    """One plot: add marks in data coordinates (in the order they should be drawn and listed in the
    legend), then :meth:`render`."""

    def __init__(self, title: str, xlabel: str = "", ylabel: str = "", width: int = 720, height: int = 288, left: int = 72):
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.width, self.height, self.left = width, height, left
        self.right, self.top, self.bottom = width - 14, 34, height - 58
        self.xlim: list[float | None] = [None, None]
        self.ylim: list[float | None] = [None, None]
        self.xticks: list[float] | None = None  # None: round values
        self.xinteger = self.yinteger = False  # a count's axis: whole-number ticks only
        self._marks: list = []  # (above the bands, order, callable (sx, sy) -> svg text), drawn clipped to the axes
        self._legend: list[tuple[str, object]] = []  # (label, callable (x, y) -> the handle's svg text)
        self._xs: list[float] = []
        self._ys: list[float] = []
        self._ylabels: list[str] | None = None
        self._hatch: str | None = None  # the colour of the hatched stairs' pattern

    @property
    def _id(self) -> str:
        """A page-wide unique id stem for this chart's defs (a report's plots have distinct titles)."""
        return "".join(ch if ch.isalnum() else "-" for ch in self.title.lower())

    def _add(self, draw, label, handle, xs=(), ys=(), below: bool = False) -> None:
        """``below``: drawn under every other mark (bands), whatever the order they came in."""
        self._marks.append((not below, len(self._marks), draw))
        self._xs.extend(_finite(xs))
        self._ys.extend(_finite(ys))
        if label:
            self._legend.append((label, handle))

    # -- marks -------------------------------------------------------------------------------------
    def band(self, x0: float | None, x1: float | None, colour: str, label: str | None = None, cls: str = "band",
             opacity: float = 0.2) -> None:
        """A shaded band over the axes' height from ``x0`` to ``x1`` (None: from the axes' left
        edge, to their right edge)."""
        c = _rgb(colour)

        def draw(sx, sy):
            a = max(sx(x0) if x0 is not None else self.left, self.left)
            b = min(sx(x1) if x1 is not None else self.right, self.right)
            a, b = sorted((a, b))
            return (f"<rect class='{cls}' x='{a:.1f}' y='{self.top}' width='{max(b - a, 0.5):.1f}' "
                    f"height='{self.bottom - self.top}' fill='{c}' fill-opacity='{opacity:g}'/>")

        self._add(draw, label, _band_handle(c, opacity), [x for x in (x0, x1) if x is not None], below=True)

    def hband(self, y0: float | None, y1: float | None, colour: str, label: str | None = None, cls: str = "hband",
              opacity: float = 0.12) -> None:
        """A shaded band over the axes' width from ``y0`` to ``y1`` (None: from the axes' bottom,
        to their top)."""
        c = _rgb(colour)

        def draw(sx, sy):
            a = min(sy(y0) if y0 is not None else self.bottom, self.bottom)
            b = max(sy(y1) if y1 is not None else self.top, self.top)
            a, b = sorted((a, b))
            return (f"<rect class='{cls}' x='{self.left}' y='{a:.1f}' width='{self.right - self.left}' "
                    f"height='{max(b - a, 0.5):.1f}' fill='{c}' fill-opacity='{opacity:g}'/>")

        self._add(draw, label, _band_handle(c, opacity), (), [y for y in (y0, y1) if y is not None], below=True)

    def vline(self, x: float, colour: str = "black", dash: str | None = None, width: float = 1, label: str | None = None,
              cls: str = "vline") -> None:
        c, d = _rgb(colour), f" stroke-dasharray='{dash}'" if dash else ""
        self._add(lambda sx, sy: f"<line class='{cls}' x1='{sx(x):.1f}' x2='{sx(x):.1f}' y1='{self.top}' y2='{self.bottom}' "
                                 f"stroke='{c}' stroke-width='{width:g}'{d}/>",
                  label, _line_handle(c, width, d), [x])

    def hline(self, y: float, colour: str = "black", dash: str | None = None, width: float = 1, label: str | None = None,
              cls: str = "hline") -> None:
        c, d = _rgb(colour), f" stroke-dasharray='{dash}'" if dash else ""
        self._add(lambda sx, sy: f"<line class='{cls}' x1='{self.left}' x2='{self.right}' y1='{sy(y):.1f}' y2='{sy(y):.1f}' "
                                 f"stroke='{c}' stroke-width='{width:g}'{d}/>",
                  label, _line_handle(c, width, d), (), [y])

    def stairs(self, counts, edges, colour: str, label: str | None = None, width: float = 2, hatch: bool = False,
               cls: str = "stairs") -> None:
        """A histogram's outline: ``counts[i]`` over [``edges[i]``, ``edges[i + 1]``), standing on 0
        at both ends (a single bin is a box on the axis, not a bar floating at its height);
        ``hatch``: filled down to 0 with diagonal lines of the colour."""
        c, counts, edges = _rgb(colour), list(counts), list(edges)
        fill = f"url(#hatch-{self._id})" if hatch else "none"

        def draw(sx, sy):
            pts = [f"{sx(edges[i]):.1f},{sy(n):.1f} {sx(edges[i + 1]):.1f},{sy(n):.1f}" for i, n in enumerate(counts)]
            pts = [f"{sx(edges[0]):.1f},{sy(0):.1f}"] + pts + [f"{sx(edges[-1]):.1f},{sy(0):.1f}"]
            tag = "polygon" if hatch else "polyline"
            return f"<{tag} class='{cls}' points='{' '.join(pts)}' fill='{fill}' stroke='{c}' stroke-width='{width:g}'/>"

        handle = ((lambda x, y: f"<rect x='{x}' y='{y - 5}' width='20' height='9' fill='{fill}' stroke='{c}'/>") if hatch
                  else _line_handle(c, width, ""))
        if hatch:
            self._hatch = c
        self._add(draw, label, handle, edges, counts + [0])

    def line(self, xs, ys, colour: str, label: str | None = None, width: float = 1.3, dots: bool = True, cls: str = "line") -> None:
        """A line through (xs, ys), broken where y is NaN; ``dots``: a dot on each point above 0."""
        c, xs, ys = _rgb(colour), list(xs), list(ys)

        def draw(sx, sy):
            runs, current = [], []
            for x, y in zip(xs, ys):
                if math.isfinite(y):
                    current.append(f"{sx(x):.1f},{sy(y):.1f}")
                elif current:
                    runs.append(current)
                    current = []
            runs.append(current)
            out = [f"<polyline points='{' '.join(r)}' fill='none' stroke='{c}' stroke-width='{width:g}'/>" for r in runs if r]
            if dots:
                out.extend(marker(".", sx(x), sy(y), 2, c) for x, y in zip(xs, ys) if math.isfinite(y) and y > 0)
            return f"<g class='{cls}'>{''.join(out)}</g>"

        def handle(x, y):
            return _line_handle(c, width, "")(x, y) + (marker(".", x + 10, y, 2, c) if dots else "")

        self._add(draw, label, handle, xs, ys)

    def points(self, xs, ys, colour: str, label: str | None = None, shape: str = "o", radii=None, radius: float = 4,
               edge: str | None = None, edge_width: float = 0, opacity: float | None = None, cls: str = "points") -> None:
        """Markers at (xs, ys): one ``radius`` (px), or one per point (``radii``)."""
        c, xs, ys = _rgb(colour), list(xs), list(ys)
        rs = list(radii) if radii is not None else [radius] * len(xs)
        e = _rgb(edge) if edge else None

        def draw(sx, sy):
            return f"<g class='{cls}'>{''.join(marker(shape, sx(x), sy(y), r, c, e, edge_width, opacity) for x, y, r in zip(xs, ys, rs))}</g>"

        self._add(draw, label, lambda x, y: marker(shape, x + 10, y, min(radius if radii is None else 4, 10), c, e, edge_width, opacity),
                  xs, ys)

    def segments(self, xs, y0s, y1s, colour: str, label: str | None = None, width: float = 4, opacity: float = 0.5,
                 cls: str = "segments") -> None:
        """A vertical segment from ``y0s[i]`` to ``y1s[i]`` at each ``xs[i]``."""
        c, xs, y0s, y1s = _rgb(colour), list(xs), list(y0s), list(y1s)

        def draw(sx, sy):
            return f"<g class='{cls}' stroke='{c}' stroke-width='{width:g}' stroke-opacity='{opacity}'>" + "".join(
                f"<line x1='{sx(x):.1f}' x2='{sx(x):.1f}' y1='{sy(a):.1f}' y2='{sy(b):.1f}'/>" for x, a, b in zip(xs, y0s, y1s)) + "</g>"

        self._add(draw, label, lambda x, y: f"<line x1='{x}' x2='{x + 20}' y1='{y}' y2='{y}' stroke='{c}' "
                                            f"stroke-width='{width:g}' stroke-opacity='{opacity}'/>", xs, y0s + y1s)

    def hbars(self, names, values, colours) -> None:
        """Horizontal bars from 0, one per name, the first at the bottom; the names label the y axis."""
        self._ylabels = [str(n) for n in names]
        for i, (v, c) in enumerate(zip(values, colours)):
            def draw(sx, sy, i=i, v=v, c=_rgb(c)):  # noqa: B008 - bound per bar, on purpose
                top, bottom = sy(i + 0.4), sy(i - 0.4)
                return (f"<rect class='bar' x='{sx(0):.1f}' y='{top:.1f}' width='{max(sx(v) - sx(0), 0.5):.1f}' "
                        f"height='{bottom - top:.1f}' fill='{c}'/>")

            self._add(draw, None, None, (0, v), (i - 0.4, i + 0.4))

    # -- rendering ---------------------------------------------------------------------------------
    @staticmethod
    def _limits(lim, values, pad):
        lo = lim[0] if lim[0] is not None else (min(values) if values else 0)
        hi = lim[1] if lim[1] is not None else (max(values) if values else 1)
        if hi <= lo:
            hi = lo + 1
        span = hi - lo
        return (lo if lim[0] is not None else lo - pad * span), (hi if lim[1] is not None else hi + pad * span)

    def _legend_layout(self) -> list[tuple[list, int, float]]:
        """The legend's groups, short labels then long ones, each as (entries, columns, column width)."""
        out = []
        for group in ([e for e in self._legend if len(e[0]) <= _LONG], [e for e in self._legend if len(e[0]) > _LONG]):
            if group:
                column = max(len(label) for label, _ in group) * _CHAR + _HANDLE
                out.append((group, max(1, min(len(group), int((self.width - 29) // column))), column))
        return out

    def render(self) -> str:
        x0, x1 = self._limits(self.xlim, self._xs, 0.05)
        y0, y1 = self._limits(self.ylim, self._ys, 0.05)

        def sx(x):
            return self.left + (x - x0) / (x1 - x0) * (self.right - self.left)

        def sy(y):
            return self.bottom - (y - y0) / (y1 - y0) * (self.bottom - self.top)

        layout = self._legend_layout()
        rows = sum(math.ceil(len(g) / ncol) for g, ncol, _ in layout)
        legend_top = self.height - 10  # the legend below the axes' labels; the chart grows by what it needs
        height = round(legend_top + rows * _ROW + 6) if layout else self.height
        clip = f"clip-{self._id}"
        out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{self.width}' height='{height}' "
               f"viewBox='0 0 {self.width} {height}' font-family='sans-serif' font-size='11'>",
               f"<defs><clipPath id='{clip}'><rect x='{self.left}' y='{self.top}' width='{self.right - self.left}' "
               f"height='{self.bottom - self.top}'/></clipPath>"]
        if self._hatch:
            out.append(f"<pattern id='hatch-{self._id}' patternUnits='userSpaceOnUse' width='6' height='6' "
                       f"patternTransform='rotate(45)'><line x1='0' y1='0' x2='0' y2='6' stroke='{self._hatch}' stroke-width='1.5'/></pattern>")
        out.append("</defs>")
        out.append(f"<g clip-path='url(#{clip})'>{''.join(draw(sx, sy) for _, _, draw in sorted(self._marks, key=lambda m: m[:2]))}</g>")
        out.append(f"<rect class='axes' x='{self.left}' y='{self.top}' width='{self.right - self.left}' "
                   f"height='{self.bottom - self.top}' fill='none' stroke='#000'/>")
        xticks = self.xticks if self.xticks is not None else nice_ticks(x0, x1, integer=self.xinteger)
        for t in xticks:
            if x0 <= t <= x1:
                out.append(f"<line x1='{sx(t):.1f}' x2='{sx(t):.1f}' y1='{self.bottom}' y2='{self.bottom + 4}' stroke='#000'/>"
                           f"<text class='xtick' x='{sx(t):.1f}' y='{self.bottom + 16}' text-anchor='middle'>{_fmt(t)}</text>")
        if self._ylabels is not None:
            for i, name in enumerate(self._ylabels):
                out.append(f"<text class='ytick' x='{self.left - 6}' y='{sy(i) + 4:.1f}' text-anchor='end'>{escape(name)}</text>")
        else:
            for t in nice_ticks(y0, y1, 6, integer=self.yinteger):
                if y0 <= t <= y1:
                    out.append(f"<line x1='{self.left - 4}' x2='{self.left}' y1='{sy(t):.1f}' y2='{sy(t):.1f}' stroke='#000'/>"
                               f"<text class='ytick' x='{self.left - 6}' y='{sy(t) + 4:.1f}' text-anchor='end'>{_fmt(t)}</text>")
        mid_x, mid_y = (self.left + self.right) / 2, (self.top + self.bottom) / 2
        out.append(f"<text class='title' x='{mid_x:.0f}' y='20' text-anchor='middle' font-size='13'>{escape(self.title)}</text>")
        out.append(f"<text class='xlabel' x='{mid_x:.0f}' y='{self.bottom + 36}' text-anchor='middle'>{escape(self.xlabel)}</text>")
        if self.ylabel:
            out.append(f"<text class='ylabel' transform='translate(16,{mid_y:.0f}) rotate(-90)' text-anchor='middle'>"
                       f"{escape(self.ylabel)}</text>")
        if layout:
            out.append(self._legend_svg(layout, legend_top))
        out.append("</svg>")
        return "".join(out)

    def _legend_svg(self, layout, top: float) -> str:
        """The legend below the axes and their labels, from ``top``: each group's entries in rows of
        as many columns as fit, centred."""
        out = [f"<g class='legend' font-size='{LEGEND_FONT}'>"]
        y = top + _ROW / 2
        for group, ncol, column in layout:
            x_first = (self.width - ncol * column) / 2
            for i, (label, handle) in enumerate(group):
                x, cy = x_first + (i % ncol) * column, y + (i // ncol) * _ROW
                out.append(f"{handle(round(x, 1), round(cy, 1))}<text x='{x + 26:.1f}' y='{cy + 3:.1f}'>{escape(label)}</text>")
            y += math.ceil(len(group) / ncol) * _ROW
        out.append("</g>")
        return "".join(out)


def _band_handle(c: str, opacity: float):
    return lambda x, y: f"<rect x='{x}' y='{y - 5}' width='20' height='9' fill='{c}' fill-opacity='{opacity:g}'/>"


def _line_handle(c: str, width: float, dash: str):
    return lambda x, y: f"<line x1='{x}' x2='{x + 20}' y1='{y}' y2='{y}' stroke='{c}' stroke-width='{width:g}'{dash}/>"
