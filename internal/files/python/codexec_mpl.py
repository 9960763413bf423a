"""codexec's matplotlib backend (MPLBACKEND=module://codexec_mpl).

Figures render with Agg (no display). show() saves every open figure as a
PNG under $HOME/.codexec/plots/ (HOME is the workspace in every sandbox mode)
and closes it; codexec returns new images there as MCP image content, like a
notebook. Shipped by codexec on a read-only path; not user code.
"""
import os

from matplotlib.backend_bases import FigureManagerBase as FigureManager  # noqa: F401
from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas  # noqa: F401


def _plot_dir():
    return os.path.join(os.environ.get("HOME") or os.getcwd(), ".codexec", "plots")


def _create(directory):
    """Open the next free figure-N.png exclusively (never overwrite)."""
    n = 1
    while True:
        path = os.path.join(directory, "figure-%d.png" % n)
        try:
            return open(path, "xb")
        except FileExistsError:
            n += 1


def show(*args, **kwargs):
    import matplotlib.pyplot as plt

    nums = plt.get_fignums()
    if not nums:
        return
    directory = _plot_dir()
    os.makedirs(directory, exist_ok=True)
    for num in nums:
        with _create(directory) as f:
            plt.figure(num).savefig(f, format="png")
    plt.close("all")


def draw_if_interactive(*args, **kwargs):
    pass
