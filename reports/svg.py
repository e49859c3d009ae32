"""A small SVG chart: axes with round ticks, step and line series, points, vertical segments,
bands, reference lines, horizontal bars and a legend — what the report's four plots draw, written
as text in a few milliseconds (a plotting library took ~0.1 s a figure: most of the checker's
output time on a history of many runs)."""

from __future__ import annotations

import math
from html import escape

#: Matplotlib's "tab10" colours, by name, so the plots keep their look.
COLOURS = {"tab:blue": "#1f77b4", "tab:orange": "#ff7f0e", "tab:green": "#2ca02c", "tab:red": "#d62728",
           "tab:purple": "#9467bd", "tab:brown": "#8c564b", "tab:pink": "#e377c2", "tab:gray": "#7f7f7f",
           "tab:olive": "#bcbd22", "tab:cyan": "#17becf", "black": "#000000", "red": "#ff0000"}
CYCLE = [c for c in COLOURS if c.startswith("tab:")]


def _c(colour: str) -> str:
    return COLOURS.get(colour, colour)


def nice_ticks(lo: float, hi: float, most: int = 8) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / most
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _fmt(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e6 else f"{v:.3g}"


class Chart:
    """One plot: add series in data coordinates, then :meth:`render`."""

    def __init__(self, title: str, xlabel: str = "", ylabel: str = "", width: int = 720, height: int = 288, left: int = 72):
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.width, self.height, self.left = width, height, left
        self.right, self.top, self.bottom = width - 14, 34, height - 58
        self.xlim: list[float | None] = [None, None]
        self.ylim: list[float | None] = [None, None]
        self._items: list[tuple] = []  # (kind, data, style)
        self._legend: list[tuple[str, str, str]] = []  # (label, colour, shape)
        self._xs: list[float] = []
        self._ys: list[float] = []
        self._next = 0
        self.yticks_labels: list[str] | None = None
        self.integer_xticks = False  # x counts things (attempts): no tick between two

    def colour(self, colour: str | None) -> str:
        if colour is None:
            colour = CYCLE[self._next % len(CYCLE)]
            self._next += 1
        return _c(colour)

    def _add(self, kind, data, colour, label, shape, xs=(), ys=()):
        self._items.append((kind, data, colour))
        self._xs.extend(xs)
        self._ys.extend(ys)
        if label:
            self._legend.append((label, colour, shape))

    def stairs(self, counts, edges, label=None, colour=None):
        c = self.colour(colour)
        self._add("stairs", (list(counts), list(edges)), c, label, "line", edges, counts)

    def line(self, xs, ys, label=None, colour=None, marker=True):
        c = self.colour(colour)
        self._add("line", (list(xs), list(ys), marker), c, label, "line", xs, ys)

    def points(self, xs, ys, label=None, colour=None, shape="o"):
        c = self.colour(colour)
        self._add("points", (list(xs), list(ys), shape), c, label, shape, xs, ys)

    def segments(self, xs, y0s, y1s, label=None, colour=None):
        c = self.colour(colour)
        self._add("segments", (list(xs), list(y0s), list(y1s)), c, label, "bar", xs, list(y0s) + list(y1s))

    def band(self, x0, x1, label=None, colour="tab:red"):
        self._add("band", (x0, x1), _c(colour), label, "band", (x0, x1))

    def vline(self, x, label=None, colour="black", dash=None):
        self._add("vline", (x, dash), _c(colour), label, "dash" if dash else "line", (x,))

    def hbars(self, names, values, colours):
        """Horizontal bars, one per name (top to bottom in order), from 0."""
        self.yticks_labels = list(names)
        for i, (v, colour) in enumerate(zip(values, colours)):
            self._add("hbar", (i, v), _c(colour), None, "bar", (0, v), (i - 0.4, i + 0.4))

    # -- rendering ---------------------------------------------------------------------------------
    def _limits(self, lim, values, pad):
        lo = lim[0] if lim[0] is not None else (min(values) if values else 0)
        hi = lim[1] if lim[1] is not None else (max(values) if values else 1)
        if hi <= lo:
            hi = lo + 1
        span = hi - lo
        return (lo if lim[0] is not None else lo - pad * span), (hi if lim[1] is not None else hi + pad * span)

    @property
    def _clip(self) -> str:
        """The clip path's id: one per chart of a page (ids are document-wide), from the title."""
        return "clip-" + "".join(ch if ch.isalnum() else "-" for ch in self.title.lower())

    def render(self) -> str:
        x0, x1 = self._limits(self.xlim, self._xs, 0.03)
        y0, y1 = self._limits(self.ylim, self._ys, 0.05)

        def sx(x):
            return self.left + (x - x0) / (x1 - x0) * (self.right - self.left)

        def sy(y):
            return self.bottom - (y - y0) / (y1 - y0) * (self.bottom - self.top)

        out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{self.width}' height='{self.height}' "
               f"viewBox='0 0 {self.width} {self.height}' font-family='sans-serif' font-size='11'>",
               f"<defs><clipPath id='{self._clip}'><rect x='{self.left}' y='{self.top}' width='{self.right - self.left}' "
               f"height='{self.bottom - self.top}'/></clipPath></defs>"]
        body = []
        for kind, data, c in self._items:
            if kind == "band":
                a, b = sorted((sx(data[0]), sx(data[1])))
                body.append(f"<rect x='{a:.1f}' y='{self.top}' width='{max(b - a, 0.5):.1f}' height='{self.bottom - self.top}' "
                            f"fill='{c}' fill-opacity='0.2'/>")
            elif kind == "vline":
                x, dash = data
                d = f" stroke-dasharray='{dash}'" if dash else ""
                body.append(f"<line x1='{sx(x):.1f}' x2='{sx(x):.1f}' y1='{self.top}' y2='{self.bottom}' stroke='{c}'{d}/>")
            elif kind == "stairs":
                counts, edges = data
                pts = []
                for i, n in enumerate(counts):
                    pts.append(f"{sx(edges[i]):.1f},{sy(n):.1f} {sx(edges[i + 1]):.1f},{sy(n):.1f}")
                body.append(f"<polyline points='{' '.join(pts)}' fill='none' stroke='{c}' stroke-width='1.5'/>")
            elif kind == "line":
                xs, ys, marker = data
                pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(xs, ys))
                body.append(f"<polyline points='{pts}' fill='none' stroke='{c}' stroke-width='1'/>")
                if marker:
                    body.extend(f"<circle cx='{sx(x):.1f}' cy='{sy(y):.1f}' r='1.5' fill='{c}'/>" for x, y in zip(xs, ys))
            elif kind == "points":
                xs, ys, shape = data
                for x, y in zip(xs, ys):
                    body.append(f"<circle cx='{sx(x):.1f}' cy='{sy(y):.1f}' r='3.5' fill='{c}'/>" if shape == "o" else
                                f"<line x1='{sx(x) - 12:.1f}' x2='{sx(x) + 12:.1f}' y1='{sy(y):.1f}' y2='{sy(y):.1f}' "
                                f"stroke='{c}' stroke-width='2'/>")
            elif kind == "segments":
                for x, a, b in zip(*data):
                    body.append(f"<line x1='{sx(x):.1f}' x2='{sx(x):.1f}' y1='{sy(a):.1f}' y2='{sy(b):.1f}' stroke='{c}' "
                                "stroke-width='4' stroke-opacity='0.5'/>")
            elif kind == "hbar":
                i, v = data
                top, bottom = sy(i - 0.4), sy(i + 0.4)
                body.append(f"<rect x='{sx(0):.1f}' y='{min(top, bottom):.1f}' width='{max(sx(v) - sx(0), 0.5):.1f}' "
                            f"height='{abs(bottom - top):.1f}' fill='{c}'/>")
        out.append(f"<g clip-path='url(#{self._clip})'>{''.join(body)}</g>")
        out.append(f"<rect x='{self.left}' y='{self.top}' width='{self.right - self.left}' height='{self.bottom - self.top}' "
                   "fill='none' stroke='#000'/>")
        for t in nice_ticks(x0, x1):
            if (self.yticks_labels is None or t >= 0) and (not self.integer_xticks or t == int(t)):
                out.append(f"<line x1='{sx(t):.1f}' x2='{sx(t):.1f}' y1='{self.bottom}' y2='{self.bottom + 4}' stroke='#000'/>"
                           f"<text x='{sx(t):.1f}' y='{self.bottom + 16}' text-anchor='middle'>{_fmt(t)}</text>")
        if self.yticks_labels is not None:
            for i, name in enumerate(self.yticks_labels):
                out.append(f"<text x='{self.left - 6}' y='{sy(i) + 4:.1f}' text-anchor='end'>{escape(str(name))}</text>")
        else:
            for t in nice_ticks(y0, y1, 6):
                out.append(f"<line x1='{self.left - 4}' x2='{self.left}' y1='{sy(t):.1f}' y2='{sy(t):.1f}' stroke='#000'/>"
                           f"<text x='{self.left - 6}' y='{sy(t) + 4:.1f}' text-anchor='end'>{_fmt(t)}</text>")
        mid_x, mid_y = (self.left + self.right) / 2, (self.top + self.bottom) / 2
        out.append(f"<text x='{mid_x:.0f}' y='20' text-anchor='middle' font-size='13'>{escape(self.title)}</text>")
        out.append(f"<text x='{mid_x:.0f}' y='{self.height - 22}' text-anchor='middle'>{escape(self.xlabel)}</text>")
        if self.ylabel:
            out.append(f"<text transform='translate(16,{mid_y:.0f}) rotate(-90)' text-anchor='middle'>{escape(self.ylabel)}</text>")
        out.extend(self._legend_svg())
        out.append("</svg>")
        return "".join(out)

    def _legend_svg(self) -> list[str]:
        if not self._legend:
            return []
        width = 22 + 6 * max(len(label) for label, _, _ in self._legend)
        x, y = self.right - width - 6, self.top + 6
        out = [f"<rect x='{x}' y='{y}' width='{width}' height='{14 * len(self._legend) + 6}' fill='#fff' "
               "fill-opacity='0.85' stroke='#ccc'/>"]
        for i, (label, c, shape) in enumerate(self._legend):
            cy = y + 12 + 14 * i
            if shape in ("band", "bar", "o"):
                out.append(f"<rect x='{x + 4}' y='{cy - 5}' width='12' height='8' fill='{c}' "
                           f"fill-opacity='{0.2 if shape == 'band' else 0.7}'/>")
            else:
                d = " stroke-dasharray='4,3'" if shape == "dash" else ""
                out.append(f"<line x1='{x + 4}' x2='{x + 16}' y1='{cy - 1}' y2='{cy - 1}' stroke='{c}' stroke-width='2'{d}/>")
            out.append(f"<text x='{x + 20}' y='{cy + 3}' font-size='9'>{escape(label)}</text>")
        return out
