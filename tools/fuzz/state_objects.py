"""Python state for the --mutate-state mode: attributes of objects (a plain instance, a
SimpleNamespace, a dataclass, a __slots__ instance) changed, added or deleted; module
globals and closure cells rebound, a global list or dict changed in place, a function's
defaults or code replaced; class attributes changed, shadowed by an instance attribute or
added; a method patched on the class, or on a base class reached through super(); the
instance's __class__ changed.

Each maker returns a state_piece.Piece. Reads of something a change adds or deletes go
through hasattr/getattr with a default, as code that tolerates both does.
"""

from tools.fuzz import state_values
from tools.fuzz.state_piece import Piece

# ---- attributes of objects -------------------------------------------------------------------

# name: (initial value, reads of it (`{h}` the holder, `{v}` the value being computed))
ATTRIBUTES = {
    "scale": ("0.5", ("{v} = {v} * {h}.scale", "{v} = torch.mul({v}, {h}.scale)")),
    "flag": ("True", ("{v} = {v}.relu() if {h}.flag else {v}.neg()",
                      "if {h}.flag:\n    {v} = {v} + 1\nelse:\n    {v} = {v} - 1")),
    "mode": ('"sum"', ('{v} = {v}.softmax(-1) if {h}.mode == "softmax" else {v}.tanh()',
                       'if {h}.mode == "sum":\n    {v} = {v} + {v}.sum(-1, keepdim=True)')),
    "offset": ("torch.ones(F)", ("{v} = {v} + {h}.offset",)),
    "shift": ("1", ("{v} = torch.roll({v}, {h}.shift, -1)", "{v} = {v} * {h}.shift")),
}
# What a read of each finds once it is deleted (a dataclass's field default comes from the class).
DEFAULTS = {"scale": "1.0", "flag": "False", "mode": '"none"', "offset": "0.0", "shift": "0"}
# New values of each attribute, that the read still accepts.
CHANGED = {
    "scale": lambda rng: rng.choice((state_values.number(rng, "0.5"),) + state_values.OTHER_NUMBERS),
    "flag": lambda rng: rng.choice(("False", "0", "None")),
    "mode": lambda rng: rng.choice(('"softmax"', '"max"')),
    "offset": lambda rng: state_values.tensor(rng, changed_kind=rng.random() < 0.5),
    "shift": lambda rng: rng.choice(("2", "0", "-1")),
}
# Reads of an attribute that may be missing.
OPTIONAL_READS = (
    '{v} = {v} + getattr({h}, "{name}", 0.0)',
    'if hasattr({h}, "{name}"):\n    {v} = {v} * {h}.{name}',
    '{v} = {v} * {h}.__dict__.get("{name}", 1.0)',
    '{v} = {v} - vars({h}).get("{name}", 0.5)',
)
HOLDERS = ("instance", "namespace", "dataclass", "slots")


def object_attributes(sg):
    holder, h, value = sg.choice(HOLDERS), sg.fresh("settings"), sg.fresh("v")
    names = [name for name in ATTRIBUTES if sg.chance(0.4)] or [sg.choice(list(ATTRIBUTES))]
    action = sg.choice(("changed", "added", "deleted") if holder != "slots" else ("changed", "deleted"))
    target = sg.choice(names) if action != "added" else "extra"
    setup = _holder(sg, holder, h, names)
    reads = [f"{value} = a"]
    for name in names:
        template = sg.choice(ATTRIBUTES[name][1])
        if action == "deleted" and name == target:  # read with a default, so it reads something either way
            template = template.replace(f"{{h}}.{name}", f'getattr({{h}}, "{name}", {DEFAULTS[name]})')
        reads.append(template.format(h=h, v=value))
    if action == "changed":
        new = CHANGED[target](sg.rng)
        mutation = sg.choice((f"{h}.{target} = {new}", f'setattr({h}, "{target}", {new})'))
    elif action == "added":
        reads.append(sg.choice(OPTIONAL_READS).format(h=h, v=value, name=target))
        new = sg.choice(state_values.NUMBERS + ("torch.full((F,), 2.0)",))
        mutation = sg.choice((f"{h}.extra = {new}", f'setattr({h}, "extra", {new})', f'vars({h})["extra"] = {new}'))
    else:
        mutation = sg.choice((f"del {h}.{target}", f'delattr({h}, "{target}")'))
    return Piece(f"{holder}_attribute_{action}", setup, reads, value, [mutation])


def _holder(sg, holder, h, names):
    values = {name: ATTRIBUTES[name][0] for name in names}
    cls = sg.fresh("Settings")
    if holder == "namespace":
        return f"{h} = types.SimpleNamespace({', '.join(f'{k}={v}' for k, v in values.items())})\n"
    if holder == "dataclass":
        fields = [f"    {k}: object = {v}" if not v.startswith("torch.") else
                  f"    {k}: object = dataclasses.field(default_factory=lambda: {v})" for k, v in values.items()]
        return f"@dataclasses.dataclass\nclass {cls}:\n" + "\n".join(fields) + f"\n\n\n{h} = {cls}()\n"
    lines = [f"class {cls}:"]
    if holder == "slots":
        lines += [f"    __slots__ = {tuple(values)!r}", ""]
    lines.append("    def __init__(self):")
    lines += [f"        self.{k} = {v}" for k, v in values.items()]
    return "\n".join(lines) + f"\n\n\n{h} = {cls}()\n"


# ---- globals, closure cells, function attributes ---------------------------------------------

GLOBALS = {
    "number": ("0.5", ("{v} = a * {g}", "{v} = a + {g} * 2"),
               lambda rng: rng.choice((state_values.number(rng, "0.5"),) + state_values.OTHER_NUMBERS)),
    "tensor": ("torch.ones(F)", ("{v} = a + {g}", "{v} = a * {g}.sum()"),
               lambda rng: state_values.tensor(rng, changed_kind=rng.random() < 0.5)),
    "flag": ("True", ("{v} = a.relu() if {g} else a.neg()",), lambda rng: rng.choice(("False", "None", "0"))),
    "string": ('"sum"', ('{v} = a.sum(-1, keepdim=True) + a if {g} == "sum" else a.amax(-1, keepdim=True) + a',),
               lambda rng: '"max"'),
}


def global_rebound(sg):
    kind = sg.choice(list(GLOBALS))
    initial, reads, new = GLOBALS[kind]
    g, value = sg.fresh("SETTING"), sg.fresh("v")
    return Piece("global_rebound", f"{g} = {initial}\n", [sg.choice(reads).format(g=g, v=value)], value,
                 [f"{g} = {new(sg.rng)}"], rebinds=(g,))


def global_container_changed(sg):
    value = sg.fresh("v")
    if sg.chance(0.5):
        g = sg.fresh("ITEMS")
        read = sg.choice(("{v} = a * sum({g})", "{v} = a * len({g})",
                          "{v} = a\nfor item in {g}:\n    {v} = {v} + item", "{v} = a * {g}[-1]"))
        change = sg.choice(("{g}.append(3.0)", "{g}[0] = -1.0", "{g}.pop()", "{g}.reverse()", "{g}.extend([0.5, 0.5])",
                            "{g}.clear()\n{g}.append(2.0)"))
        return Piece("global_list_changed", f"{g} = [1.0, 2.0]\n", [read.format(g=g, v=value)], value,
                     [change.format(g=g)])
    g = sg.fresh("TABLE")
    read = sg.choice(('{v} = a * {g}["scale"]', '{v} = a + {g}.get("extra", 0.0)', "{v} = a * len({g})",
                      '{v} = a * {g}["scale"] if "extra" not in {g} else a - {g}["extra"]'))
    change = sg.choice(('{g}["scale"] = 2.5', '{g}["extra"] = 1.5', '{g}.update(scale=-1.0, extra=0.25)',
                        '{g}.pop("scale")\n{g}["scale"] = 4.0'))
    return Piece("global_dict_changed", f'{g} = {{"scale": 0.5}}\n', [read.format(g=g, v=value)], value,
                 [change.format(g=g)])


# cell value: (initial, body of the inner function over `t` and `cell`, new values)
CELLS = (
    ("0.5", "t * cell", lambda rng: state_values.number(rng, "0.5")),
    ("torch.ones(F)", "t + cell", lambda rng: state_values.tensor(rng, changed_kind=rng.random() < 0.5)),
    ("True", "t.relu() if cell else t.neg()", lambda rng: "False"),
    ("torch.relu", "cell(t)", lambda rng: state_values.other(rng, state_values.UNARY, "torch.relu")),
)


def closure_cell_rebound(sg):
    factory, inner, setter, value = sg.fresh("make_reader"), sg.fresh("reader"), sg.fresh("set_cell"), sg.fresh("v")
    initial, body, new = sg.choice(CELLS)
    setup = (
        f"def {factory}():\n"
        f"    cell = {initial}\n\n"
        "    def read(t):\n"
        f"        return {body}\n\n"
        "    def write(new):\n"
        "        nonlocal cell\n"
        "        cell = new\n\n"
        "    return read, write\n"
        f"\n\n{inner}, {setter} = {factory}()\n"
    )
    mutation = sg.choice((f"{setter}({new(sg.rng)})", f"{inner}.__closure__[0].cell_contents = {new(sg.rng)}"))
    return Piece("closure_cell_rebound", setup, [f"{value} = {inner}(a)"], value, [mutation])


def function_attributes_changed(sg):
    """A function's defaults or code replaced: the same function object, other behaviour."""
    function, other, value = sg.fresh("scale_by"), sg.fresh("shift_by"), sg.fresh("v")
    setup = (f"def {function}(t, factor={state_values.number(sg.rng)}, *, power=1):\n    return t * factor ** power\n"
             f"\n\ndef {other}(t, factor=0.0, *, power=1):\n    return t + factor * power\n")
    kind = sg.choice(("function_defaults_changed", "function_code_replaced"))
    if kind == "function_defaults_changed":
        mutation = sg.choice((f"{function}.__defaults__ = ({state_values.number(sg.rng)},)",
                              f'{function}.__kwdefaults__ = {{"power": 2}}'))
    else:
        mutation = f"{function}.__code__ = {other}.__code__"
    return Piece(kind, setup, [f"{value} = {function}(a)"], value, [mutation])


# ---- classes ---------------------------------------------------------------------------------

def class_attributes(sg):
    cls, obj, value = sg.fresh("Policy"), sg.fresh("policy"), sg.fresh("v")
    other_cls = sg.fresh("OtherPolicy")
    setup = (
        f"class {cls}:\n"
        f"    scale = {state_values.number(sg.rng)}\n\n"
        "    def apply(self, t):\n"
        '        return t * self.scale + getattr(self, "bonus", 0.0)\n'
        f"\n\nclass {other_cls}:\n"
        "    scale = -1.0\n\n"
        "    def apply(self, t):\n"
        "        return t - self.scale\n"
        f"\n\n{obj} = {cls}()\n"
    )
    kind = sg.choice(("class_attribute_changed", "class_attribute_shadowed_by_instance", "class_attribute_added",
                      "method_patched_on_class", "instance_class_changed"))
    new = state_values.number(sg.rng)
    mutation = {
        "class_attribute_changed": (f"{cls}.scale = {new}", f'setattr({cls}, "scale", {new})'),
        "class_attribute_shadowed_by_instance": (f"{obj}.scale = {new}",),
        "class_attribute_added": (f"{cls}.bonus = {new}",),
        "method_patched_on_class": (f"{cls}.apply = lambda self, t: t - self.scale",
                                    f"{cls}.apply = {other_cls}.apply"),
        "instance_class_changed": (f"{obj}.__class__ = {other_cls}",),
    }[kind]
    reads = sg.choice((f"{obj}.apply(a)", f"{cls}.apply({obj}, a)", f"a * {obj}.scale", f"a * type({obj}).scale")
                      if kind in ("class_attribute_changed", "class_attribute_shadowed_by_instance")
                      else (f"{obj}.apply(a)", f"{obj}.apply(a) * {obj}.scale"))
    if kind == "class_attribute_shadowed_by_instance" and "type(" in reads:
        reads = f"{obj}.apply(a)"  # the class's own attribute is not shadowed
    return Piece(kind, setup, [f"{value} = {reads}"], value, [sg.choice(mutation)])


def base_method_patched(sg):
    """The subclass's method calls the base class's through super(); the base's is replaced."""
    base, derived, obj, value = sg.fresh("Base"), sg.fresh("Derived"), sg.fresh("derived"), sg.fresh("v")
    module = sg.chance(0.5)
    method = "forward" if module else "transform"
    header = "(torch.nn.Module)" if module else ""
    setup = (
        f"class {base}{header}:\n"
        f"    def {method}(self, x):\n"
        f"        return x * {state_values.number(sg.rng)}\n"
        f"\n\nclass {derived}({base}):\n"
        f"    def {method}(self, x):\n"
        f"        return super().{method}(x) + 1.0\n"
        f"\n\n{obj} = {derived}()\n"
    )
    patch = sg.choice((f"lambda self, x: x - {state_values.number(sg.rng)}",
                       f"lambda self, x: {state_values.other(sg.rng, state_values.UNARY[:5])}(x)"))
    read = f"{obj}(a)" if module and sg.chance(0.6) else f"{obj}.{method}(a)"
    return Piece("base_method_patched_via_super", setup, [f"{value} = {read}"], value, [f"{base}.{method} = {patch}"])


MAKERS = [
    (3, object_attributes), (2, global_rebound), (1, global_container_changed), (2, closure_cell_rebound),
    (1, function_attributes_changed), (2, class_attributes), (2, base_method_patched),
]
