"""Python source built line by line, with the indentation of the block being written."""

import contextlib


class CodeWriter:
    """Collects lines of source; `block(header)` indents what is written inside it.

        w = CodeWriter()
        with w.block("if n > 2:"):
            w.line("x = x + 1")
        w.text()  ->  "if n > 2:\\n    x = x + 1\\n"
    """

    INDENT = "    "

    def __init__(self, depth=0):
        self.depth = depth
        self.lines = []

    def line(self, text):
        self.lines.append(self.INDENT * self.depth + text)

    def lines_of(self, text):
        """Writes every line of a multi-line snippet at the current indentation."""
        for part in text.splitlines():
            self.line(part) if part.strip() else self.lines.append("")

    @contextlib.contextmanager
    def block(self, header):
        """A compound statement: the header, then the body written inside the `with`.

        An empty body gets `pass`, so a block is valid whatever its maker decided to write."""
        self.line(header)
        start = len(self.lines)
        self.depth += 1
        try:
            yield self
        finally:
            if len(self.lines) == start:
                self.line("pass")
            self.depth -= 1

    def text(self):
        return "\n".join(self.lines) + "\n"
