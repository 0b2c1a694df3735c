"""Text layouts shared by the slide renderers: a dis-style bytecode listing and FX node rows."""

from __future__ import annotations

import re

from bytegraph.viewer.model import FrameTrace


def bytecode_listing(frame: FrameTrace) -> tuple[list[str], dict[int, int]]:
    """The frame's bytecode laid out like `dis.dis` prints it, and where each offset landed.

    Returns the listing's lines and a map from instruction offset to the 0-based index of its
    line. A blank line separates source lines and the line number is printed on the first
    instruction of each, `>>` marks jump targets, as in the listings the slides showed.
    """
    lines: list[str] = []
    index_of_offset: dict[int, int] = {}
    previous_line = object()
    for offset, opname, argrepr, line, is_jump_target in frame.bytecode:
        starts_line = line != previous_line
        if starts_line and lines:
            lines.append("")
        previous_line = line
        number = str(line) if starts_line and line is not None else ""
        marker = ">>" if is_jump_target else ""
        text = f"{number:>4}    {marker:>2} {offset:>5} {opname:<24} {argrepr}".rstrip()
        index_of_offset[offset] = len(lines)
        lines.append(text)
    return lines, index_of_offset


_COLUMN_GAP = re.compile(r"\s{2,}")


def split_node_row(row: str) -> list[str]:
    """Split an FX tabular row ("call_method  sum_1  sum  (a,)  {}") into its columns.

    Columns are separated by two or more spaces; text that does not split into the five
    columns is returned whole, as one column.
    """
    columns = _COLUMN_GAP.split(row.strip())
    return columns if len(columns) == 5 else [row.strip()]


def window(count: int, center: int, size: int) -> range:
    """Indices of at most `size` consecutive items out of `count`, keeping `center` inside."""
    if count <= size:
        return range(count)
    start = min(max(center - size // 2, 0), count - size)
    return range(start, start + size)
