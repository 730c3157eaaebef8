"""The box table ``model.summary()`` prints: drawn by ``rich`` when it is installed, else as the same plain text.

The plain renderer lays a table out as rich does for the table Keras 3 builds (fixed-width columns, one space of
padding each side, heavy head, a line between rows, words wrapped and a word too long for its cell cut with an
ellipsis), so the summary reads the same with or without rich.
"""
from __future__ import annotations

import dataclasses
import re

_WORDS = re.compile(r"\s*\S+\s*")
# Rich's HEAVY_HEAD box: (left, fill, divider, right) per rule, and (left, divider, right) per kind of row.
_TOP, _HEAD_RULE, _ROW_RULE, _BOTTOM = ("┏", "━", "┳", "┓"), ("┡", "━", "╇", "┩"), ("├", "─", "┼", "┤"), \
    ("└", "─", "┴", "┘")
_HEAD_EDGES, _BODY_EDGES = ("┃", "┃", "┃"), ("│", "│", "│")


@dataclasses.dataclass
class SummaryTable:
    """What a summary shows: its title line, the table (columns and rows of cell text) and the lines after it."""

    title: str
    headers: list[str]
    justify: list[str]  # "left", "right" or "center", per column
    widths: list[int]  # the width each column asks for, padding excluded (as rich.table.Column(width=...))
    line_length: int  # the table's width, borders included
    rows: list[list[str]] = dataclasses.field(default_factory=list)
    footer: list[str] = dataclasses.field(default_factory=list)


def render_text(table: SummaryTable) -> str:
    """The summary as plain text (with a final newline)."""
    widths = cell_widths(table.widths, table.line_length)
    lines = [table.title, _rule(_TOP, widths)]
    lines += _row_lines(table.headers, widths, table.justify, _HEAD_EDGES)
    lines.append(_rule(_HEAD_RULE, widths))
    for i, row in enumerate(table.rows):
        if i:
            lines.append(_rule(_ROW_RULE, widths))
        lines += _row_lines(row, widths, table.justify, _BODY_EDGES)
    lines.append(_rule(_BOTTOM, widths))
    lines += table.footer
    return "\n".join(lines) + "\n"


def render_rich(table: SummaryTable, terminal: bool) -> tuple[object, str | None]:
    """A rich console and, unless ``terminal`` (print in colour to stdout), the summary it captured as text."""
    import rich.console
    import rich.table
    import rich.text

    columns = [rich.table.Column(header, justify=justify, width=width)
               for header, justify, width in zip(table.headers, table.justify, table.widths)]
    grid = rich.table.Table(*columns, width=table.line_length, show_lines=True)
    for row in table.rows:
        grid.add_row(*(rich.text.Text(cell) for cell in row))
    if terminal:
        console = rich.console.Console(highlight=False)
    else:
        # A captured summary has no colour codes, and a table wider than 80 columns is not cropped.
        console = rich.console.Console(highlight=False, force_terminal=False, color_system=None,
                                       width=max(80, table.line_length))
        console.begin_capture()
    console.print(rich.text.Text(table.title, style="bold"))
    console.print(grid)
    for line in table.footer:
        label, _, rest = line.partition(": ")
        console.print(rich.text.Text.assemble((f"{label}: ", "bold"), rest))
    return console, None if terminal else console.end_capture()


def cell_widths(widths: list[int], line_length: int) -> list[int]:
    """Each column's width with its padding, shrunk evenly (as rich does) when the table would be too wide."""
    room = line_length - (len(widths) + 1)
    cells = [min(width + 2, room) for width in widths]
    excess = sum(cells) - room
    if excess <= 0:
        return cells
    out, columns_left = [], len(cells)
    for width in cells:
        # Python's round() (half to even) is the rounding rich's ratio_reduce uses.
        take = min(width, round(excess / columns_left))
        out.append(width - take)
        excess -= take
        columns_left -= 1
    return out


def _rule(chars, widths):
    left, fill, divider, right = chars
    return left + divider.join(fill * width for width in widths) + right


def _row_lines(cells, widths, justify, edges):
    """The text lines of one row: each cell wrapped to its width, the shorter cells filled with blank lines."""
    left, divider, right = edges
    wrapped = [_wrap(str(cell), width - 2, how) for cell, width, how in zip(cells, widths, justify)]
    height = max(len(lines) for lines in wrapped)
    out = []
    for line in range(height):
        parts = [f" {lines[line] if line < len(lines) else ' ' * (width - 2)} "
                 for lines, width in zip(wrapped, widths)]
        out.append(left + divider.join(parts) + right)
    return out


def _wrap(text, width, justify):
    """``text`` broken at spaces into lines of ``width`` cells, each justified; a longer word ends with '…'."""
    lines = []
    for paragraph in text.split("\n"):
        current = ""
        for word in _WORDS.findall(paragraph) or [""]:
            if current and len(current) + len(word.rstrip()) > width:
                lines.append(current)
                current = ""
            current += word
        lines.append(current)
    return [_justify(_fit(line, width), width, justify) for line in lines]


def _fit(line, width):
    if len(line) > width:
        line = line.rstrip()
    return line if len(line) <= width else line[:max(width - 1, 0)] + "…"


def _justify(line, width, justify):
    if justify == "left":
        return line.ljust(width)
    line = line.rstrip()
    if justify == "right":
        return line.rjust(width)
    left = (width - len(line)) // 2
    return (" " * left + line).ljust(width)
