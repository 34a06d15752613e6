"""The class's distributions as PNG: the totals, and each task's points in small panels.

matplotlib is an optional extra (`pip install 'symblock[plot]'`): `available()` says whether it is
there, and the summary says so and goes on without plots. The figures are drawn with the Agg backend
on a Figure of its own (no pyplot state, no user style), at a fixed size, with no software name or
date in the PNG, so the same class gives the same bytes on every run.
"""
from __future__ import annotations

import io

SIZE, DPI = (6.4, 3.2), 100
COLUMNS = 4        # task panels per row
BINS = 10          # bins of a task's points
STYLE = {"font.family": "DejaVu Sans", "font.size": 9, "svg.hashsalt": "symblock", "path.simplify": False}


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def pngs(cls) -> dict[str, bytes]:
    """{file name: PNG bytes}: totals.png and tasks.png (none when nothing was graded)."""
    if not cls.graded:
        return {}
    import matplotlib
    totals = [float(g.total) for g in cls.graded]
    tasks = {s: [float(g.scores[s]) for g in cls.graded] for s in cls.asked}
    with matplotlib.rc_context():   # matplotlib's defaults, not the user's matplotlibrc
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(STYLE)
        return {"totals.png": _totals(totals, cls.max_total), "tasks.png": _tasks(tasks, cls.points)}


def _figure(size):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=size, dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _png(fig) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    return out.getvalue()


def _totals(totals: list[float], max_total: int) -> bytes:
    fig = _figure(SIZE)
    ax = fig.add_subplot()
    step = max(1, max_total // 20)
    edges = sorted({*range(0, max_total, step), max_total})   # the last bin holds the full marks
    ax.hist(totals, bins=edges, color="#4c72b0", edgecolor="white")
    ax.set(xlim=(0, max_total), xlabel=f"total (of {max_total})", ylabel="files")
    ax.yaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    return _png(fig)


def _tasks(tasks: dict[str, list[float]], points: dict[str, int]) -> bytes:
    rows = -(-len(tasks) // COLUMNS)
    fig = _figure((2.4 * COLUMNS, 1.9 * rows))
    for k, (step, got) in enumerate(tasks.items()):
        ax = fig.add_subplot(rows, COLUMNS, k + 1)
        top = points[step]
        ax.hist(got, bins=[top * b / BINS for b in range(BINS + 1)], color="#55a868", edgecolor="white")
        ax.set_title(step, fontsize=9)
        ax.set_xlim(0, top)
        ax.yaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    return _png(fig)
