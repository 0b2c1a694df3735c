"""State on a user nn.Module, for the --mutate-state mode: its tensors (a parameter, a buffer,
a plain tensor attribute; replaced, loaded from a state dict with assign=True, written in
place, or no longer requiring grad) and its training flag; its submodule containers
(ModuleList, ModuleDict, Sequential, a plain submodule); its callables (a method or forward
set on the instance, an activation held in an attribute).

Each maker returns a state_generator.Piece: the class and its instance, what fn reads, and
one change. The function reads the module by calling it, by calling its forward, or by
reading the tensors directly, since each goes through other guards.
"""

from tools.fuzz import state_values
from tools.fuzz.state_piece import Piece

# forward of the module with three tensors: `weight` (a parameter), `shift` (a buffer),
# `factor` (a plain tensor attribute), each of F values.
TENSOR_FORWARDS = (
    "x * self.weight + self.shift * self.factor",
    "torch.tanh(x * self.weight) + self.shift - self.factor",
    "(x + self.shift) * self.weight * self.factor",
    "torch.addcmul(self.shift, x, self.weight) / (self.factor.abs() + 1)",
)


def module_tensors(sg):
    cls, m, value = sg.fresh("Scaled"), sg.fresh("scaled"), sg.fresh("v")
    forward = sg.choice(TENSOR_FORWARDS)
    reads_training = sg.chance(0.4)
    lines = [
        f"class {cls}(torch.nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        f"        self.weight = torch.nn.Parameter({state_values.tensor(sg.rng)})",
        f'        self.register_buffer("shift", {state_values.tensor(sg.rng)})',
        f"        self.factor = {state_values.tensor(sg.rng)}  # neither a parameter nor a buffer",
        "",
        "    def forward(self, x):",
    ]
    if reads_training:
        lines += ["        if self.training:", "            x = x * 2"]
    lines.append(f"        return {forward}")
    setup = "\n".join(lines) + f"\n\n\n{m} = {cls}()\n"
    reads = [sg.choice((f"{value} = {m}(a)", f"{value} = {m}.forward(a)",
                        f"{value} = a * {m}.weight + {m}.shift * {m}.factor"))]
    options = ["parameter_replaced", "buffer_replaced", "tensor_attribute_replaced", "state_dict_loaded_with_assign",
               "tensor_written_in_place", "parameter_data_replaced", "parameter_requires_grad_changed"]
    if reads_training and "(a)" in reads[0]:  # through forward
        options += ["training_mode_changed"] * 2
    kind = sg.choice(options)
    return Piece(kind, setup, reads, value, _tensor_change(sg, kind, m))


def _tensor_change(sg, kind, m):
    new = state_values.tensor(sg.rng, changed_kind=sg.chance(0.4))
    if kind == "parameter_replaced":
        return [sg.choice((f"{m}.weight = torch.nn.Parameter({new})",
                           f'{m}.register_parameter("weight", torch.nn.Parameter({new}))',
                           f'setattr({m}, "weight", torch.nn.Parameter({new}))'))]
    if kind == "buffer_replaced":
        return [sg.choice((f"{m}.shift = {new}", f'{m}.register_buffer("shift", {new})'))]
    if kind == "tensor_attribute_replaced":
        return [sg.choice((f"{m}.factor = {new}", f'setattr({m}, "factor", {new})'))]
    if kind == "state_dict_loaded_with_assign":
        # load_state_dict checks shapes, so the new tensors keep them (values and dtype change).
        weight, shift = state_values.tensor(sg.rng), state_values.tensor(sg.rng)
        if sg.chance(0.3):
            weight = f"({weight}).double()"
        if sg.chance(0.5):
            return [f'{m}.load_state_dict({{"weight": {weight}}}, strict=False, assign=True)']
        return [f'{m}.load_state_dict({{"weight": {weight}, "shift": {shift}}}, assign=True)']
    if kind == "tensor_written_in_place":
        target = sg.choice(("weight", "shift", "factor"))
        op = sg.choice(("mul_({n})", "add_({n})", "fill_({n})", "copy_(torch.linspace(0, 1, F))"))
        return ["with torch.no_grad():", f"    {m}.{target}.{op.format(n=state_values.number(sg.rng))}"]
    if kind == "parameter_data_replaced":  # the same Parameter object with another tensor inside
        return [f"{m}.weight.data = ({new}).detach()"]
    if kind == "parameter_requires_grad_changed":
        return [f"{m}.weight.requires_grad_(False)"]
    if kind == "training_mode_changed":
        return [sg.choice((f"{m}.eval()", f"{m}.train(False)", f"{m}.training = False"))]
    raise AssertionError(kind)


# ---- submodule containers --------------------------------------------------------------------

CONTAINERS = {
    "layers": ("torch.nn.ModuleList([torch.nn.Linear(F, F), torch.nn.Tanh()])",
               ("for layer in self.layers:\n    x = layer(x)",
                "for index in range(len(self.layers)):\n    x = self.layers[index](x)")),
    "heads": ('torch.nn.ModuleDict({"first": torch.nn.Linear(F, F)})',
              ("for name in self.heads:\n    x = x + self.heads[name](x)",
               "for name, head in self.heads.items():\n    x = x + head(x)",
               "x = x + sum(head(x) for head in self.heads.values())")),
    "body": ("torch.nn.Sequential(torch.nn.Linear(F, F), torch.nn.ReLU())", ("x = self.body(x)",)),
    "last": ("torch.nn.Linear(F, F)", ("x = self.last(x)",)),
}
CONTAINER_KINDS = {"layers": "module_list_appended", "heads": "module_dict_key_added",
                   "body": "sequential_item_replaced", "last": "submodule_replaced"}


def module_containers(sg):
    cls, m, value = sg.fresh("Stack"), sg.fresh("stack"), sg.fresh("v")
    names = [name for name in CONTAINERS if sg.chance(0.5)] or [sg.choice(list(CONTAINERS))]
    lines = [f"class {cls}(torch.nn.Module):", "    def __init__(self):", "        super().__init__()"]
    lines += [f"        self.{name} = {CONTAINERS[name][0]}" for name in names]
    lines += ["", "    def forward(self, x):"]
    for name in names:
        lines += ["        " + line for line in sg.choice(CONTAINERS[name][1]).splitlines()]
    lines.append("        return x")
    setup = "\n".join(lines) + f"\n\n\n{m} = {cls}()\n"
    changed = sg.choice(names)
    new = state_values.other(sg.rng, state_values.MODULES)
    mutation = {
        "layers": (f"{m}.layers.append({new})", f"{m}.layers.insert(0, {new})", f"{m}.layers.extend([{new}])",
                   f"{m}.layers[1] = {new}", f"del {m}.layers[0]"),
        "heads": (f'{m}.heads["second"] = {new}', f'{m}.heads.update({{"second": {new}}})',
                  f'{m}.heads["first"] = {new}'),
        "body": (f"{m}.body[1] = {new}", f"{m}.body[0] = {new}", f"{m}.body.append({new})"),
        "last": (f"{m}.last = {new}", f'{m}.add_module("last", {new})', f'setattr({m}, "last", {new})'),
    }[changed]
    reads = [sg.choice((f"{value} = {m}(a)", f"{value} = {sg.unary(f'{m}(a)')}"))]
    return Piece(CONTAINER_KINDS[changed], setup, reads, value, [sg.choice(mutation)])


# ---- callables on the instance ---------------------------------------------------------------

def module_callables(sg):
    cls, m, value = sg.fresh("Head"), sg.fresh("head"), sg.fresh("v")
    # Not a module at first: one would be a child module, which only a module may replace.
    act = state_values.other(sg.rng, state_values.UNARY, "torch.nn.Tanh()")
    setup = (
        f"class {cls}(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        f"        self.scale = torch.nn.Parameter({state_values.tensor(sg.rng)})\n"
        f"        self.act = {act}  # an activation held in an attribute\n\n"
        "    def transform(self, x):\n"
        "        return x * self.scale\n\n"
        "    def forward(self, x):\n"
        "        return self.act(self.transform(x))\n"
        f"\n\n{m} = {cls}()\n"
    )
    kind = sg.choice(("activation_swapped", "method_assigned_on_instance", "forward_assigned_on_instance"))
    if kind == "activation_swapped":
        mutation = f"{m}.act = {state_values.other(sg.rng, state_values.UNARY, act)}"
    elif kind == "method_assigned_on_instance":
        mutation = sg.choice((
            f"{m}.transform = lambda x: x - {state_values.number(sg.rng)}",
            f"{m}.transform = types.MethodType(lambda self, x: x * self.scale * {state_values.number(sg.rng)}, {m})",
            # (not a module: assigned, it would be a submodule that the class's method hides)
            f"{m}.transform = {state_values.other(sg.rng, state_values.UNARY, 'torch.nn.Tanh()')}",
        ))
    else:
        mutation = sg.choice((
            f"{m}.forward = lambda x: x * {state_values.number(sg.rng)}",
            f"{m}.forward = {m}.transform",
            f"{m}.forward = types.MethodType(lambda self, x: self.transform(x) + 1, {m})",
        ))
    read = sg.choice((f"{m}(a)", f"{m}.forward(a)", f"{m}.transform(a)") if kind == "method_assigned_on_instance"
                     else (f"{m}(a)", f"{m}.forward(a)"))
    return Piece(kind, setup, [f"{value} = {read}"], value, [mutation])


MAKERS = [(4, module_tensors), (2, module_containers), (2, module_callables)]
