"""torch's global state, for the --mutate-state mode: autocast entered, the default dtype
changed, deterministic algorithms turned on, grad mode turned off, inference mode entered,
around every later call.

The function reads the state implicitly (a matmul autocast runs in bfloat16, a factory's
dtype, a parameter's gradient tracking) or explicitly (torch.is_grad_enabled() and the
like, in a branch). A change is entered on the program's RESTORE stack, which the runner
closes after the program, so the next program starts from torch's defaults. Each maker
returns a state_piece.Piece.
"""

from tools.fuzz.state_piece import Piece

AUTOCASTS = ('torch.autocast("cpu")', 'torch.autocast("cpu", dtype=torch.bfloat16)',
             'torch.autocast(device_type="cpu", dtype=torch.float16)', 'torch.amp.autocast("cpu")')
MATMULS = ("{v} = a @ {w}.t()", "{v} = torch.nn.functional.linear(a, {w})", "{v} = torch.mm(a, {w}) + a",
           "{v} = torch.matmul(a.relu(), {w})")


def autocast_entered(sg):
    w, value = sg.fresh("WEIGHT"), sg.fresh("v")
    reads = [sg.choice(MATMULS).format(v=value, w=w)]
    if sg.chance(0.3):
        reads.append(f'{value} = {value}.float() * 2 if torch.is_autocast_enabled("cpu") else {value}')
    setup = f"{w} = torch.linspace(-1, 1, F * F).reshape(F, F)\n"
    return Piece("autocast_entered", setup, reads, value, [f"RESTORE.enter_context({sg.choice(AUTOCASTS)})"])


FACTORY_READS = ("{v} = a + torch.ones(F)", "{v} = a * torch.arange(F) * 0.5", "{v} = a + torch.linspace(0, 1, F)",
                 "{v} = a.to(torch.get_default_dtype())", "{v} = a * torch.tensor([0.5] * F)",
                 "{v} = a + torch.full((F,), 2.0)")


def default_dtype_changed(sg):
    value = sg.fresh("v")
    dtype = sg.choice(("torch.float64", "torch.float64", "torch.bfloat16", "torch.float16"))
    mutation = ["RESTORE.callback(torch.set_default_dtype, torch.get_default_dtype())",
                f"torch.set_default_dtype({dtype})"]
    return Piece("default_dtype_changed", "", [sg.choice(FACTORY_READS).format(v=value)], value, mutation)


def deterministic_algorithms_toggled(sg):
    value = sg.fresh("v")
    read = sg.choice((
        "{v} = a * 2 if torch.are_deterministic_algorithms_enabled() else a - 1",
        "{v} = a.cumsum(-1)\nif torch.are_deterministic_algorithms_enabled():\n    {v} = {v}.flip(-1)",
        "{v} = a + 1 if torch.is_deterministic_algorithms_warn_only_enabled() else a.relu()",
    ))
    mutation = ["RESTORE.callback(torch.use_deterministic_algorithms, torch.are_deterministic_algorithms_enabled(),",
                "                 warn_only=torch.is_deterministic_algorithms_warn_only_enabled())",
                sg.choice(("torch.use_deterministic_algorithms(True)",
                           "torch.use_deterministic_algorithms(True, warn_only=True)"))]
    return Piece("deterministic_algorithms_toggled", "", [read.format(v=value)], value, mutation)


GRAD_READS = ("{v} = a * {p}", "{v} = torch.tanh(a * {p}) if torch.is_grad_enabled() else a + {p}",
              "{v} = a * {p}\n{v} = {v} * 2 if {v}.requires_grad else {v} - 1")
INFERENCE_READS = GRAD_READS + ("{v} = a * {p} if torch.is_inference_mode_enabled() else a - {p}",
                                "{v} = a * {p}\n{v} = {v} + 1 if {v}.is_inference() else {v}")


def grad_mode_changed(sg):
    p, value = sg.fresh("SCALE"), sg.fresh("v")
    setup = f"{p} = torch.nn.Parameter(torch.linspace(0.5, 1.5, F))\n"
    if sg.chance(0.3):
        return Piece("inference_mode_entered", setup, [sg.choice(INFERENCE_READS).format(v=value, p=p)], value,
                     ["RESTORE.enter_context(torch.inference_mode())"])
    mutation = sg.choice((["RESTORE.enter_context(torch.no_grad())"],
                          ["RESTORE.enter_context(torch.set_grad_enabled(False))"],
                          ["RESTORE.callback(torch.set_grad_enabled, torch.is_grad_enabled())",
                           "torch.set_grad_enabled(False)"]))
    return Piece("grad_mode_changed", setup, [sg.choice(GRAD_READS).format(v=value, p=p)], value, mutation)


MAKERS = [(2, autocast_entered), (2, default_dtype_changed), (1, deterministic_algorithms_toggled),
          (2, grad_mode_changed)]
