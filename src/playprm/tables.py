"""Tables as text: the one place that lays out rows for the terminal and for Markdown files (reports, dataset
and model cards, benchmark write-ups)."""

from __future__ import annotations

from collections.abc import Sequence


def _alignment(headers: Sequence, rows: list[list[str]], align: str | None) -> str:
    """One letter per column, ``l`` or ``r``. None: the first column left, the others right; ``"numbers"``:
    right where every cell of the column is a whole number."""
    if align is None:
        return "l" + "r" * (len(headers) - 1)
    if align == "numbers":
        return "".join("r" if rows and all(row[i].lstrip("-").isdigit() for row in rows) else "l"
                       for i in range(len(headers)))
    return align


def markdown_table(headers: Sequence, rows: Sequence[Sequence], *, align: str | None = None) -> str:
    """A GitHub-flavoured Markdown table (``|`` inside a cell escaped); ``align`` as in ``_alignment``."""
    cells = [list(map(str, row)) for row in rows]

    def line(values) -> str:
        return "| " + " | ".join(str(value).replace("|", "\\|") for value in values) + " |"

    rule = ["---:" if side == "r" else "---" for side in _alignment(headers, cells, align)]
    return "\n".join([line(headers), "| " + " | ".join(rule) + " |", *(line(row) for row in cells)])


def text_table(headers: Sequence, rows: Sequence[Sequence], *, align: str | None = None, rule: bool = True) -> str:
    """An aligned plain-text table, columns two spaces apart, with a dashed rule under the headers."""
    cells = [list(map(str, row)) for row in rows]
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *cells, strict=True)]
    sides = _alignment(headers, cells, align)

    def line(values) -> str:
        return "  ".join(str(value).ljust(width) if side == "l" else str(value).rjust(width)
                         for value, width, side in zip(values, widths, sides, strict=True)).rstrip()

    dashes = ["  ".join("-" * width for width in widths)] if rule else []
    return "\n".join([line(headers), *dashes, *(line(row) for row in cells)])
