"""Org-mode beamer slides: one block per step, in the layout the hand-made slides used.

Each block has two columns: the frame's bytecode in a minted listing with the current
instruction highlighted (so exporting needs minted and -shell-escape, as before), and the
states: the step's note, the instruction counter, the value stack and the output graph.
"""

from __future__ import annotations

from pathlib import Path

from bytegraph.viewer.listing import bytecode_listing
from bytegraph.viewer.model import WRITERS, FrameTrace, Step, Trace

_HEADER = """\
#+TITLE: Tracing {title}
#+STARTUP: beamer
#+LATEX_CLASS: beamer
#+LATEX_HEADER: \\usepackage{{minted}}
#+OPTIONS: H:2 toc:nil
"""

_BLOCK = """\
** Tracing {name} (step {step}) :B_block:
:PROPERTIES:
:BEAMER_env: block
:BEAMER_opt: fragile
:END:
*** C :B_columns:
:PROPERTIES:
:BEAMER_opt: t
:BEAMER_env: columns
:END:
**** Tracing the bytecode :BMCOL:
:PROPERTIES:
:BEAMER_col: 0.5
:END:

\\tiny
#+BEGIN_SRC latex
\\begin{{minted}}[highlightlines={highlight}, highlightcolor=pink]{{python}}
{listing}
\\end{{minted}}
#+END_SRC


**** States :B_block:BMCOL:
:PROPERTIES:
:BEAMER_col: 0.5
:BEAMER_opt: t
:BEAMER_env: block
:END:

{note}

***** Instruction counter
\\small

{offset}



***** Frame stack
:PROPERTIES:
:BEAMER_env: block
:END:
\\small
|---+--------|
| id | values |
|---+--------|
{stack}



***** Output graph :B_block:
:PROPERTIES:
:BEAMER_env: block
:END:
\\tiny

|---+-----|
|  id | ops |
|---+-----|
{graph}



"""


def org_verbatim(text: str) -> str:
    """Text as org inline code that survives a table cell.

    `|` would end the cell, so it becomes a broken bar; `~` would end ~code~, so such text
    is marked with =verbatim= instead (and the rare text holding both loses its `=` marks).
    """
    text = text.replace("|", "\N{BROKEN BAR}").replace("\n", " ")
    if "~" not in text:
        return f"~{text}~"
    return "=" + text.replace("=", "\N{MODIFIER LETTER SHORT EQUALS SIGN}") + "="


def _table_rows(values: list[str]) -> str:
    return "\n".join(f"| {index} | {org_verbatim(value)} |" for index, value in enumerate(values))


def _heading_text(text: str) -> str:
    # A heading is one line, and a trailing :word: would read as tags.
    return " ".join(text.split()).replace(":", "\N{RATIO}")


def frame_blocks(frame: FrameTrace) -> list[str]:
    """One org block per step of `frame`."""
    listing, index_of_offset = bytecode_listing(frame)
    blocks = []
    for number, step in enumerate(frame.steps):
        blocks.append(
            _BLOCK.format(
                name=_heading_text(frame.name),
                step=number,
                # minted counts lines from 1; an offset missing from the listing highlights nothing.
                highlight=index_of_offset[step.offset] + 1 if step.offset in index_of_offset else 0,
                listing="\n".join(listing),
                note=_note(step),
                offset=step.offset,
                stack=_table_rows(step.stack),
                graph=_table_rows(step.graph),
            )
        )
    return blocks


def _note(step: Step) -> str:
    # Org would read a line starting with `*` as a heading and `#+` as a keyword.
    lines = step.note.splitlines() or [""]
    return "\n".join(" " + line if line.startswith(("*", "#+")) else line for line in lines)


def render_org(trace: Trace) -> str:
    parts = [_HEADER.format(title=_heading_text(trace.title))]
    for index, frame in enumerate(trace.frames):
        parts.append(f"* Frame {index}: {_heading_text(frame.name)} ({frame.kind})\n")
        parts.extend(frame_blocks(frame))
    return "\n".join(parts)


def write_org(trace: Trace, path) -> None:
    Path(path).write_text(render_org(trace), encoding="utf-8")


WRITERS["org"] = write_org
