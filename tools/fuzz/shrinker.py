"""Shrinks a failing program to a small one that fails the same way, and saves it as a
regression test.

Delta debugging over the program's removable parts: statements (anywhere: the function
under test, helpers, class bodies, the preamble), the input sets in VARIANTS (and the
changes in a --mutate-state program's MUTATIONS) and the items of the returned
tuple/list/dict. Chunks of parts are removed while the program still fails
with the same signature (verdict, backend, kind of difference); then each compound
statement is replaced by its body where that keeps the failure; then again chunks.
"""

import ast
import os
import re

from tools.fuzz.batch import Job, WorkerPool

REGRESSIONS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                               "tests", "fuzz_regressions")
_STATEMENT_FIELDS = ("body", "orelse", "finalbody")
_NEEDS_BODY = (ast.FunctionDef, ast.ClassDef, ast.If, ast.For, ast.While, ast.With, ast.Try, ast.ExceptHandler)


# ---- what a failure is -----------------------------------------------------------------------


def signature(outcome):
    """The kind of failure: equal signatures are taken to be the same bug."""
    call, detail = _call_label(outcome.detail or "")
    if outcome.verdict in ("crash", "error", "ok", "recompile"):
        category = ""
    elif detail.startswith("eager raised"):
        found = re.match(r"eager raised (\S+), compiled raised (\w+)", detail)
        category = f"raised {found.group(1)} -> {found.group(2)}" if found else "raised"
    elif detail.startswith("printed output"):
        category = "printed output"
    elif detail.startswith("both raised"):
        category = detail.split(":", 1)[0]  # the exception's type
    elif "values differ" in detail.splitlines()[0]:
        category = "values"
    else:
        kinds = re.findall(r"\('(\w+)'", detail.splitlines()[0])
        category = " -> ".join(kinds[:1] + kinds[-1:]) if len(kinds) >= 2 else "state"
    return f"{outcome.verdict} [{outcome.backend}] {call}{category}".strip()


def _call_label(detail):
    """("after mutate_x, call again: ", the rest) for a --mutate-state detail, else ("", detail):
    the call is part of the failure's kind (which change the compiled function missed)."""
    found = re.match(r"(first call|call again|after \w+(?:, call again)?): ", detail)
    return (found.group(0), detail[found.end():]) if found else ("", detail)


# ---- the removable parts of a program --------------------------------------------------------


def _parts(tree):
    """(owner list, item) pairs, in a fixed order for a given source."""
    parts = []
    for node in ast.walk(tree):
        for field in _STATEMENT_FIELDS:
            statements = getattr(node, field, None)
            if isinstance(statements, list):  # (a lambda's body is an expression)
                parts += [(statements, s) for s in statements if isinstance(s, ast.stmt)]
        if isinstance(node, ast.Assign) and (_assigns(node, "VARIANTS") or _assigns(node, "MUTATIONS")) \
                and isinstance(node.value, ast.List):
            parts += [(node.value.elts, item) for item in node.value.elts]
        if isinstance(node, ast.FunctionDef) and node.name == "fn":
            for returned in (n for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None):
                if isinstance(returned.value, (ast.Tuple, ast.List)):
                    parts += [(returned.value.elts, item) for item in returned.value.elts]
    return parts


def _assigns(node, name):
    return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)


def count_parts(source):
    return len(_parts(ast.parse(source)))


def without(source, indices):
    """The source with the parts at these indices removed (bodies left empty get `pass`)."""
    tree = ast.parse(source)
    parts = _parts(tree)
    doomed = {id(parts[i][1]) for i in indices}
    for owner, item in parts:
        if id(item) in doomed and item in owner:
            owner.remove(item)
    _fill_empty_bodies(tree)
    return render(tree)


def hoisted(source, index):
    """The source with compound statement `index` replaced by its body, or None."""
    tree = ast.parse(source)
    parts = _parts(tree)
    owner, statement = parts[index]
    if not isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try)) or statement not in owner:
        return None
    at = owner.index(statement)
    owner[at:at + 1] = statement.body
    _fill_empty_bodies(tree)
    return render(tree)


def _fill_empty_bodies(tree):
    for node in ast.walk(tree):
        if isinstance(node, _NEEDS_BODY) and not node.body:
            node.body.append(ast.Pass())
        if isinstance(node, ast.Try) and not node.handlers and not node.finalbody:
            node.finalbody.append(ast.Pass())


def render(tree):
    """Source with two blank lines around top-level definitions."""
    chunks = []
    for statement in tree.body:
        text = ast.unparse(statement)
        spaced = isinstance(statement, (ast.FunctionDef, ast.ClassDef))
        chunks.append(("\n\n" if spaced and chunks else "") + text + ("\n\n" if spaced else ""))
    return re.sub(r"\n{4,}", "\n\n\n", "\n".join(chunks)).strip("\n") + "\n"


# ---- delta debugging -------------------------------------------------------------------------


class _Budget:
    def __init__(self, tests):
        self.left = tests

    def spend(self):
        self.left -= 1
        return self.left >= 0


def shrink(source, still_fails, max_tests=400):
    """The smallest variant of `source` found for which still_fails(candidate) holds."""
    budget = _Budget(max_tests)
    source = render(ast.parse(source))
    source = _remove_chunks(source, still_fails, budget, max_tests // 2)
    source = _drop_unused_definitions(source, still_fails, budget)
    source = _hoist_blocks(source, still_fails, budget)
    while budget.left > 0:
        smaller = _remove_each(source, still_fails, budget)
        if smaller == source:
            break
        source = smaller
    # What the removals left unused (a --mutate-state program's changes no longer made).
    return _drop_unused_definitions(source, still_fails, _Budget(1))


def _remove_chunks(source, still_fails, budget, tests):
    """Delta debugging: chunks of parts removed, halving the chunk size when none can go."""
    stop_at = budget.left - tests
    chunks = 2
    while budget.left > stop_at:
        total = count_parts(source)
        if total == 0:
            return source
        chunks = min(chunks, total)
        size = -(-total // chunks)
        for start in range(0, total, size):
            candidate = without(source, range(start, min(start + size, total)))
            if not budget.spend():
                return source
            if still_fails(candidate):
                source = candidate
                chunks = max(chunks - 1, 2)
                break
        else:
            if chunks >= total:
                return source
            chunks = min(total, chunks * 2)
    return source


_REQUIRED = {"fn", "make_inputs", "VARIANTS", "MUTATIONS", "RESTORE"}  # the last two: --mutate-state


def unused_definitions_removed(source):
    """Top-level definitions (classes, functions, globals, imports) nothing else names."""
    tree = ast.parse(source)
    while True:
        used = {}
        for statement in tree.body:
            for node in ast.walk(statement):
                if isinstance(node, ast.Name):
                    used.setdefault(node.id, set()).add(id(statement))
        def needed(statement):
            names = _defined_names(statement)
            return not names or names & _REQUIRED or any(used.get(n, set()) - {id(statement)} for n in names)
        kept = [s for s in tree.body if needed(s)]
        if len(kept) == len(tree.body):
            return render(tree)
        tree.body = kept


def _defined_names(statement):
    if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, ast.Assign):
        return {t.id for t in statement.targets if isinstance(t, ast.Name)}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    return set()


def _drop_unused_definitions(source, still_fails, budget):
    candidate = unused_definitions_removed(source)
    if candidate != source and budget.spend() and still_fails(candidate):
        return candidate
    return source


def _remove_each(source, still_fails, budget):
    """One part at a time, last first (what comes later uses what comes earlier)."""
    index = count_parts(source) - 1
    while index >= 0 and budget.left > 0:
        candidate = without(source, [index])
        if budget.spend() and still_fails(candidate):
            source = candidate
        index = min(index - 1, count_parts(source) - 1)
    return source


def _hoist_blocks(source, still_fails, budget):
    index = 0
    while index < count_parts(source) and budget.left > 0:
        candidate = hoisted(source, index)
        if candidate is not None and budget.spend() and still_fails(candidate):
            source = candidate
            continue
        index += 1
    return source


# ---- saving ----------------------------------------------------------------------------------


def shrink_failure(failure, pool, max_tests=400):
    """The failure's program shrunk, judged by running candidates in `pool`."""
    wanted = signature(failure.outcome)
    backend = (failure.outcome.backend,) if failure.outcome.backend else failure.job.backends
    counter = iter(range(1 << 30))

    def still_fails(candidate):
        job = Job(f"{failure.job.id}_shrink{next(counter)}", candidate, backend, failure.job.mode)
        return signature(pool.run_one(job)) == wanted

    return shrink(failure.job.source, still_fails, max_tests), backend


def regression_text(failure, source, backend):
    program = failure.program
    detail = (failure.outcome.detail or "").strip().splitlines()
    quoted = "\n".join("    " + line for line in detail[:8]).replace('"""', "'''")
    header = (
        f'"""Fuzz regression {program.name}: {signature(failure.outcome)}.\n\n'
        f"Found by `python -m tools.fuzz{' --mutate-state' if program.mode != 'default' else ''} "
        f"--seed {program.seed} --start {program.index} --n 1`, shrunk.\n"
        f"{'Input set' if program.mode == 'default' else 'Call'} {failure.outcome.variant}:\n{quoted}\n"
        '"""\n\n'
        f"FUZZ_BACKENDS = {tuple(backend)!r}\n"
        f"FUZZ_VERDICT = {failure.outcome.verdict!r}\n"
        + (f"FUZZ_MODE = {failure.job.mode!r}\n" if failure.job.mode != "default" else "")
        + "\n"
    )
    body = source
    if body.startswith(('"""', "'")):  # the generated module docstring, if the shrinker kept it
        body = body.split("\n", 1)[1]
    return header + body


def save_failures(failures, max_per_signature=3, jobs=1, directory=REGRESSIONS_DIR):
    """Shrinks and saves up to `max_per_signature` failures of each signature; returns paths."""
    os.makedirs(directory, exist_ok=True)
    saved, per_signature = [], {}
    with WorkerPool(jobs=jobs) as pool:
        for failure in failures:
            key = signature(failure.outcome)
            if per_signature.get(key, 0) >= max_per_signature:
                continue
            per_signature[key] = per_signature.get(key, 0) + 1
            source, backend = shrink_failure(failure, pool)
            path = os.path.join(directory, f"{failure.program.name}_{failure.outcome.verdict}.py")
            with open(path, "w") as file:
                file.write(regression_text(failure, source, backend))
            saved.append(path)
    return saved
