"""The trace viewer's data model: what the symbolic interpreter did, one step at a time.

A `Trace` holds one `FrameTrace` per traced frame (the original function, each resume
function after a graph break, each inlined call), and each frame holds its `Step`s in the
order they ran. Everything a renderer shows is plain text already (value reprs, FX node
rows), so a trace can be saved as JSON and rendered without torch or the code objects.

Convention: a step records the state *after* its instruction ran, as the hand-made slides
this viewer replaces did (a LOAD_CONST step already shows the constant on the stack).
"""

from __future__ import annotations

import dataclasses
import dis
import inspect
import json
import linecache
from typing import Any

FRAME_KINDS = ("original", "resume", "inlined")


@dataclasses.dataclass
class Step:
    """The interpreter's state right after one instruction."""

    offset: int
    opname: str
    argrepr: str = ""
    line: int | None = None
    source: str = ""  # the text of `line` in the frame's source file
    stack: list[str] = dataclasses.field(default_factory=list)  # bottom first
    locals: dict[str, str] = dataclasses.field(default_factory=dict)
    graph: list[str] = dataclasses.field(default_factory=list)  # FX rows, one per node
    note: str = ""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Step:
        return cls(**{field.name: data[field.name] for field in dataclasses.fields(cls) if field.name in data})


# One row of the bytecode panel: (offset, opname, argrepr, line, is_jump_target).
BytecodeRow = tuple[int, str, str, "int | None", bool]


def bytecode_rows(code) -> list[BytecodeRow]:
    """The instructions of `code` as panel rows; CACHE entries are left out as `dis` does.

    `dis` gives a line number only on the first instruction of each line; the panel wants
    every row to know its line, so the last one seen is carried forward.
    """
    rows = []
    line = None
    for instruction in dis.get_instructions(code):
        # 3.13 names the line `line_number` and turns `starts_line` into a flag.
        starts = getattr(instruction, "line_number", instruction.starts_line)
        if starts is not None:
            line = starts
        rows.append((instruction.offset, instruction.opname, instruction.argrepr, line, instruction.is_jump_target))
    return rows


def code_source_lines(code) -> tuple[list[str], int]:
    """The source of `code` and its first line number, or ([], 0) when it cannot be found.

    Resume functions are made from the original code and keep its file and first line, so
    `inspect` finds the original function's text for them too. Code with no findable
    block (made by `exec`, or from a file that changed) falls back to the lines its
    instructions point at.
    """
    try:
        lines, first = inspect.getsourcelines(code)
        return [line.rstrip("\n") for line in lines], max(first, 1)
    except (OSError, TypeError):
        pass
    numbers = [line for _, _, line in code.co_lines() if line is not None]
    if not numbers:
        return [], 0
    first, last = min(numbers), max(numbers)
    lines = [linecache.getline(code.co_filename, number).rstrip("\n") for number in range(first, last + 1)]
    if not any(lines):
        return [], 0
    return lines, first


@dataclasses.dataclass
class FrameTrace:
    """The steps of one traced frame and what is needed to show its code."""

    name: str
    code: Any = None  # the code object; None for a trace loaded from JSON
    kind: str = "original"  # one of FRAME_KINDS
    parent: int | None = None  # index of the calling frame (inlined frames)
    steps: list[Step] = dataclasses.field(default_factory=list)
    bytecode: list[BytecodeRow] | None = None  # derived from `code` when not given
    source_lines: tuple[list[str], int] | None = None  # (lines, first line number), as inspect gives
    parent_step: int | None = None  # index of the parent's step that made this call
    filename: str = ""  # the code's file; taken from `code` when not given

    def __post_init__(self):
        if self.kind not in FRAME_KINDS:
            raise ValueError(f"frame kind must be one of {FRAME_KINDS}, got {self.kind!r}")
        if self.bytecode is None:
            self.bytecode = bytecode_rows(self.code) if self.code is not None else []
        if self.source_lines is None:
            self.source_lines = code_source_lines(self.code) if self.code is not None else ([], 0)
        if not self.filename and self.code is not None:
            self.filename = self.code.co_filename

    def to_dict(self) -> dict:
        lines, first = self.source_lines
        return {
            "name": self.name,
            "kind": self.kind,
            "parent": self.parent,
            "parent_step": self.parent_step,
            "filename": self.filename,
            "first_line": first,
            "source_lines": list(lines),
            "bytecode": [list(row) for row in self.bytecode],
            "steps": [step.to_dict() for step in self.steps],
        }

    @classmethod
    def from_dict(cls, data: dict) -> FrameTrace:
        return cls(
            name=data["name"],
            kind=data["kind"],
            parent=data.get("parent"),
            parent_step=data.get("parent_step"),
            filename=data.get("filename", ""),
            steps=[Step.from_dict(step) for step in data["steps"]],
            bytecode=[tuple(row) for row in data["bytecode"]],
            source_lines=(list(data["source_lines"]), data["first_line"]),
        )


def graph_text(graph) -> str:
    """Readable text of a compiled graph: a GraphModule's Python code, or the text as given."""
    if isinstance(graph, str):
        return graph
    print_readable = getattr(graph, "print_readable", None)
    if print_readable is not None:
        try:
            return print_readable(print_output=False)
        except Exception:  # a half-built module still has a repr worth showing
            pass
    code = getattr(graph, "code", None)
    return code if isinstance(code, str) else repr(graph)


def safe_repr(value) -> str:
    """repr() that never raises: a broken __repr__ must not cost the user their trace."""
    try:
        return repr(value)
    except Exception as error:
        return f"<{type(value).__name__} (repr failed: {type(error).__name__})>"


class ReprText:
    """A value known only by its repr (a trace's result read back from JSON)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other) -> bool:
        return isinstance(other, ReprText) and other.text == self.text


@dataclasses.dataclass
class Trace:
    """Everything the viewer shows for one traced call."""

    frames: list[FrameTrace] = dataclasses.field(default_factory=list)
    graphs: list = dataclasses.field(default_factory=list)  # GraphModules or their text
    guards: list[str] = dataclasses.field(default_factory=list)
    result: Any = None
    # The order the steps ran in across frames: (frame index, step index) pairs.
    timeline: list[tuple[int, int]] = dataclasses.field(default_factory=list)

    @property
    def title(self) -> str:
        return self.frames[0].name if self.frames else "trace"

    def to_dict(self) -> dict:
        return {
            "title": self.title,
            "frames": [frame.to_dict() for frame in self.frames],
            "graphs": [graph_text(graph) for graph in self.graphs],
            "guards": [str(guard) for guard in self.guards],
            "result": safe_repr(self.result),
            "timeline": [list(entry) for entry in self.timeline],
        }

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict) -> Trace:
        trace = cls(
            frames=[FrameTrace.from_dict(frame) for frame in data["frames"]],
            graphs=list(data.get("graphs", [])),
            guards=list(data.get("guards", [])),
            result=ReprText(data.get("result", "None")),
            timeline=[tuple(entry) for entry in data.get("timeline", [])],
        )
        return trace

    @classmethod
    def from_json(cls, text: str) -> Trace:
        return cls.from_dict(json.loads(text))

    def to_html(self, path) -> None:
        WRITERS["html"](self, path)

    def to_beamer(self, path) -> None:
        WRITERS["beamer"](self, path)

    def to_org(self, path) -> None:
        WRITERS["org"](self, path)


# Format name -> write(trace, path). Each renderer registers its own (the renderers import
# this model; the model imports none of them). bytegraph.viewer loads them all.
WRITERS = {}
