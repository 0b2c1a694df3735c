"""The model zoo: real architectures from tiny configs with random weights, captured by
bytegraph and by torch.compile in the same run, in inference and in a training step.

    python -m benchmarks.zoo                                  # every model, both modes, generate()
    python -m benchmarks.zoo --models gpt2,bert --mode eval   # a few, one mode
    python -m benchmarks.zoo --models llama-generate           # generate() with a compiled forward
    python -m benchmarks.zoo --list
    python -m benchmarks.zoo --in-process --models bert --systems bytegraph   # no child process

Each (model, mode) runs in a child process (`benchmarks.worker zoo NAME MODE`) with a
timeout, so a crash or a hang is recorded against the model instead of ending the run. In
it: eager mode is the reference; then torch.compile and bytegraph, each with a counting
backend (the graphs run eagerly, kernel for kernel), are called twice with the same shapes
(new values): the first call is what is captured, the second must compile nothing. Outputs,
gradients (training) and buffers are compared with eager mode's on both calls.

Writes OUT/zoo.json (every number), OUT/zoo.md (the table) and OUT/ZOO_TRIAGE.md (the break
reasons ranked by how many models they block, with reproducers from tests/capture_gaps.py).
`make bench` runs the zoo too and puts the table in latest.md. No weights are downloaded:
every model is built from its config class.
"""

import argparse
import copy
import dataclasses
import json
import os
import sys
import time
from typing import Callable

import torch

from benchmarks import models, model_step

_VOCAB = 256


@dataclasses.dataclass(frozen=True)
class ZooModel:
    name: str  # what --models takes
    family: str  # decoder, encoder, encoder-decoder, vision, torch
    make: Callable[[], tuple]  # () -> (nn.Module, args, kwargs), weights from the current seed
    description: str
    modes: tuple = model_step.MODES


def _bench(name):
    """A model benchmarks.models already builds (its BenchModel's make)."""
    return lambda: models.select(names=[name])[0].make()


def _ids(length=16):
    return torch.randint(0, _VOCAB, (2, length))


def _lm(model_class, config_class, **config):
    """A transformers model from its config class: 2 layers, hidden 64, no dropout, no cache."""
    import transformers

    config = getattr(transformers, config_class)(vocab_size=_VOCAB, use_cache=False, **config)
    return getattr(transformers, model_class)(models.without_dropout(config))


def _text(model_class, config_class, **config):
    return lambda: (_lm(model_class, config_class, **config), (_ids(),), {})


def _seq2seq(model_class, config_class, **config):
    return lambda: (_lm(model_class, config_class, **config), (),
                    {"input_ids": _ids(), "decoder_input_ids": _ids(length=8)})


def _vision(model_class, config_class, **config):
    def make():
        import transformers

        config_object = models.without_dropout(getattr(transformers, config_class)(**config))
        return getattr(transformers, model_class)(config_object), (torch.randn(2, 3, 32, 32),), {}

    return make


_LAYERS = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
               max_position_embeddings=64)
_IMAGE = dict(image_size=32, patch_size=8, num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
              intermediate_size=128)

ZOO = [
    # decoder language models
    ZooModel("gpt2", "decoder", _bench("GPT-2"), "GPT2Model (benchmarks.models)"),
    ZooModel("gpt-neo", "decoder", _text("GPTNeoModel", "GPTNeoConfig", num_layers=2, hidden_size=64, num_heads=4,
                                         attention_types=[[["global", "local"], 1]], window_size=8,
                                         bos_token_id=0, eos_token_id=0,
                                         intermediate_size=128, max_position_embeddings=64),
             "GPTNeoModel, global + local attention"),
    ZooModel("gptj", "decoder", _text("GPTJModel", "GPTJConfig", n_layer=2, n_embd=64, n_head=4, rotary_dim=8,
                                      n_inner=128, n_positions=64, bos_token_id=0, eos_token_id=0),
             "GPTJModel, partial rotary"),
    ZooModel("opt", "decoder", _text("OPTModel", "OPTConfig", num_hidden_layers=2, hidden_size=64,
                                     num_attention_heads=4, ffn_dim=128, word_embed_proj_dim=64,
                                     max_position_embeddings=64), "OPTModel"),
    ZooModel("bloom", "decoder", _text("BloomModel", "BloomConfig", n_layer=2, hidden_size=64, n_head=4),
             "BloomModel, ALiBi"),
    ZooModel("llama", "decoder", _bench("Llama"), "LlamaModel, GQA 4/2 (benchmarks.models)"),
    ZooModel("mistral", "decoder", _text("MistralModel", "MistralConfig", num_key_value_heads=2, **_LAYERS),
             "MistralModel, GQA 4/2"),
    ZooModel("qwen2", "decoder", _text("Qwen2Model", "Qwen2Config", num_key_value_heads=2, **_LAYERS),
             "Qwen2Model, GQA 4/2"),
    ZooModel("phi", "decoder", _text("PhiModel", "PhiConfig", partial_rotary_factor=0.5, **_LAYERS),
             "PhiModel, partial rotary"),
    ZooModel("gemma", "decoder", _text("GemmaModel", "GemmaConfig", num_key_value_heads=1, head_dim=16, **_LAYERS),
             "GemmaModel, multi-query"),
    ZooModel("falcon", "decoder", _text("FalconModel", "FalconConfig", num_hidden_layers=2, hidden_size=64,
                                        num_attention_heads=4), "FalconModel, multi-query"),
    # encoders
    ZooModel("bert", "encoder", _bench("BERT"), "BertModel (benchmarks.models)"),
    ZooModel("roberta", "encoder", _text("RobertaModel", "RobertaConfig", **_LAYERS), "RobertaModel"),
    ZooModel("distilbert", "encoder", _text("DistilBertModel", "DistilBertConfig", n_layers=2, dim=64, n_heads=4,
                                            hidden_dim=128, max_position_embeddings=64), "DistilBertModel"),
    ZooModel("albert", "encoder", _text("AlbertModel", "AlbertConfig", embedding_size=32, **_LAYERS),
             "AlbertModel, shared layers"),
    ZooModel("electra", "encoder", _text("ElectraModel", "ElectraConfig", embedding_size=32, **_LAYERS),
             "ElectraModel"),
    ZooModel("deberta-v2", "encoder", _text("DebertaV2Model", "DebertaV2Config", relative_attention=True,
                                            pos_att_type=["p2c", "c2p"], position_biased_input=False,
                                            position_buckets=32, norm_rel_ebd="layer_norm", share_att_key=True,
                                            **_LAYERS), "DebertaV2Model, disentangled relative attention"),
    # encoder-decoders
    ZooModel("t5", "encoder-decoder", _bench("T5"), "T5Model (benchmarks.models)"),
    ZooModel("bart", "encoder-decoder", _seq2seq("BartModel", "BartConfig", encoder_layers=2, decoder_layers=2,
                                                 d_model=64, encoder_attention_heads=4, decoder_attention_heads=4,
                                                 encoder_ffn_dim=128, decoder_ffn_dim=128,
                                                 max_position_embeddings=64), "BartModel"),
    # vision
    ZooModel("vit", "vision", _bench("ViT"), "ViTModel, 32x32 images (benchmarks.models)"),
    ZooModel("deit", "vision", _vision("DeiTModel", "DeiTConfig", **_IMAGE), "DeiTModel, 32x32 images"),
    ZooModel("resnet", "vision", _bench("ResNet"), "ResNetModel, basic blocks (benchmarks.models)"),
    ZooModel("convnext", "vision", _vision("ConvNextModel", "ConvNextConfig", num_stages=2, hidden_sizes=[16, 32],
                                           depths=[1, 1], image_size=32), "ConvNextModel, 2 stages"),
    ZooModel("swin", "vision", _vision("SwinModel", "SwinConfig", image_size=32, patch_size=4, embed_dim=16,
                                       depths=[1, 1], num_heads=[2, 2], window_size=4, mlp_ratio=2.0),
             "SwinModel, 2 stages, window 4"),
    # plain torch
    ZooModel("transformer-encoder", "torch", _bench("TransformerEncoder"),
             "nn.TransformerEncoder (benchmarks.models)"),
    ZooModel("lstm", "torch", lambda: (models.LSTMTagger(), (_ids(),), {}), "nn.LSTM tagger, 2 layers"),
    ZooModel("unet", "torch", lambda: (models.UNet(), (torch.randn(2, 3, 32, 32),), {}),
             "U-Net: BatchNorm, skips, F.interpolate"),
]

# generate() of a decoder whose forward is compiled: the KV cache (a DynamicCache) is an
# object mutated across calls, and the sequence grows by one token per call.
GENERATE_TOKENS = 8  # zoo_report.GENERATE_STEPS follows it


def _llama_for_generation():
    import transformers

    config = transformers.LlamaConfig(vocab_size=_VOCAB, num_key_value_heads=2, use_cache=True, bos_token_id=0,
                                      eos_token_id=1, pad_token_id=0, **_LAYERS)
    return transformers.LlamaForCausalLM(models.without_dropout(config)), (torch.randint(2, _VOCAB, (1, 8)),), {}


GENERATE = ZooModel("llama-generate", "generate", _llama_for_generation,
                    f"LlamaForCausalLM.generate(), {GENERATE_TOKENS} new tokens, forward compiled",
                    modes=("generate",))


def select(names=None):
    """The zoo's entries (all, or those named, in the zoo's order); unknown names raise."""
    everything = ZOO + [GENERATE]
    if not names:
        return everything
    known = {m.name: m for m in everything}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown zoo models {unknown}; known: {', '.join(known)}")
    return [m for m in everything if m.name in set(names)]


# ---- one model in one mode ----------------------------------------------------------------------


def _verdict(summary, reference, records):
    """ok / wrong / error for one system's run against eager mode's records."""
    error = summary.get("error")
    if error and error["error"].startswith("CorrectnessError"):
        return "wrong", [error["error"]]
    found = []
    for i, (want, got) in enumerate(zip(reference, records), 1):
        found += [f"call {i}: {text}" for text in model_step.differences(want, got)]
    if found:
        return "wrong", found[:8]
    if error:
        return "error", []
    return "ok", []


def measure(name, mode, *, systems=("torch", "bytegraph"), verify=False, stage=None):
    """Measures one (model, mode): {"model", "family", "mode", "eager", SYSTEM: summary}.

    `stage(key, value)` is called as each part finishes (the worker saves it at once, so a
    crash in bytegraph keeps eager's and torch's numbers). A system's summary gets "verdict"
    (ok, wrong, error) and "differences" from eager mode.
    """
    stage = stage or (lambda key, value: None)
    (entry,) = select([name])
    if mode == "generate":
        return measure_generate(entry, systems=systems, stage=stage)
    torch.manual_seed(0)
    module, args, kwargs = entry.make()
    calls = [(args, kwargs), model_step.same_inputs_again(args, kwargs, seed=1)]
    row = {"model": entry.name, "family": entry.family, "mode": mode, "description": entry.description}
    stage("model", {k: row[k] for k in ("model", "family", "mode", "description")})
    reference_module = copy.deepcopy(module)
    stage("eager_started", True)
    start = time.perf_counter()
    try:
        reference = [model_step.step(reference_module, reference_module, mode, a, k, seed=i)
                     for i, (a, k) in enumerate(calls)]
    except Exception as error:
        row["eager"] = {"error": f"{type(error).__name__}: {error}"[:400]}
        stage("eager", row["eager"])
        return row
    row["eager"] = {"seconds": time.perf_counter() - start}
    stage("eager", row["eager"])
    from benchmarks import capture

    for system in systems:
        stage(f"{system}_started", True)
        copy_of_module = copy.deepcopy(module)
        if system == "bytegraph":
            records, summary = capture.bytegraph_steps(copy_of_module, mode, calls, verify=verify)
        else:
            records, summary = capture.torch_steps(copy_of_module, mode, calls)
        summary["verdict"], summary["differences"] = _verdict(summary, reference, records)
        row[system] = summary
        stage(system, summary)
    return row


def measure_generate(entry, *, systems, stage):
    """generate() twice on the same prompt with `model.forward` compiled; tokens compared with
    eager generate(). Graphs and recompiles of the first generate() (one forward per token,
    the sequence growing) and what the second one compiled again (must be nothing)."""
    from benchmarks import capture

    torch.manual_seed(0)
    model, (prompt,), _ = entry.make()
    model.eval()
    row = {"model": entry.name, "family": entry.family, "mode": "generate", "description": entry.description}
    stage("model", dict(row))
    options = dict(max_new_tokens=GENERATE_TOKENS, min_new_tokens=GENERATE_TOKENS, do_sample=False)
    stage("eager_started", True)
    start = time.perf_counter()
    with torch.no_grad():
        expected = model.generate(prompt, **options)
    row["eager"] = {"seconds": time.perf_counter() - start, "tokens": expected[0, -GENERATE_TOKENS:].tolist()}
    stage("eager", row["eager"])
    for system in systems:
        stage(f"{system}_started", True)
        copy_of_model = copy.deepcopy(model)
        summary = capture.generate_steps(system, copy_of_model, prompt, options, calls=2)
        outputs = summary.pop("outputs")
        if summary.get("error"):
            summary["verdict"], summary["differences"] = "error", []
        else:
            wrong = [f"call {i}: tokens {out[0, -GENERATE_TOKENS:].tolist()}" for i, out in enumerate(outputs, 1)
                     if not torch.equal(out, expected)]
            summary["verdict"], summary["differences"] = ("wrong", wrong) if wrong else ("ok", [])
        row[system] = summary
        stage(system, summary)
    return row


# ---- the whole zoo, each (model, mode) in a child process ---------------------------------------


def jobs(names=None, modes=None):
    """[(model name, mode)] in the zoo's order."""
    return [(m.name, mode) for m in select(names) for mode in m.modes if not modes or mode in modes]


def run_zoo(names=None, modes=None, *, systems=("torch", "bytegraph"), timeout=600, in_process=False, log=print):
    """Measures every (model, mode); returns the rows (a crashed job keeps what it saved)."""
    from benchmarks import run

    rows = []
    for name, mode in jobs(names, modes):
        log(f"  zoo: {name} / {mode}", flush=True)
        if in_process:
            row = measure(name, mode, systems=systems)
        else:
            row = run.run_worker(["zoo", name, mode, "--systems", ",".join(systems)], timeout=timeout, log=log)
            row = _row_of_worker(row, name, mode)
        rows.append(row)
    return rows


def _row_of_worker(saved, name, mode):
    """A worker's saved stages as a zoo row; a crash or timeout goes to the stage it hit."""
    row = dict(saved.get("model") or {"model": name, "mode": mode})
    for key in ("eager", "torch", "bytegraph"):
        if key in saved:
            row[key] = saved[key]
    crash = saved.get("crash")
    if crash:
        stage = crash.get("stage") or "eager"
        row[stage] = {"verdict": "crash", "crash": crash["how"], "stderr_tail": crash["stderr_tail"][-1500:]}
    row["wall_s"] = saved.get("wall_s")
    return row


def machine():
    from benchmarks import timing

    return timing.machine_info()


def write(rows, out_dir, *, started=None, finished=None, machine_info=None):
    """OUT/zoo.json, OUT/zoo.md and OUT/ZOO_TRIAGE.md; returns their paths."""
    from benchmarks import zoo_report

    os.makedirs(out_dir, exist_ok=True)
    results = {"machine": machine_info or machine(), "started": started,
               "finished": finished or time.strftime("%Y-%m-%d %H:%M:%S %Z"), "rows": rows}
    paths = [os.path.join(out_dir, "zoo.json"), os.path.join(out_dir, "zoo.md"),
             os.path.join(out_dir, "ZOO_TRIAGE.md")]
    with open(paths[0], "w") as f:
        json.dump(results, f, indent=1, default=str)
    with open(paths[1], "w") as f:
        f.write("\n".join(zoo_report.table_section(results)) + "\n")
    with open(paths[2], "w") as f:
        f.write(zoo_report.triage(results))
    return paths


def _split_names(text):
    return [n for part in text for n in part.split(",") if n] if text else None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.zoo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", help="comma- or space-separated names (default: all)")
    parser.add_argument("--mode", choices=["eval", "train", "generate"], action="append",
                        help="run only this mode (repeatable; default: every mode of each model)")
    parser.add_argument("--systems", default="torch,bytegraph", help="torch, bytegraph or both (default)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed to one (model, mode)")
    parser.add_argument("--in-process", action="store_true", help="no child processes (quicker; no crash guard)")
    parser.add_argument("--out", default=None, help="write zoo.json, zoo.md and ZOO_TRIAGE.md here (default: "
                        "benchmarks/results when the whole zoo runs in child processes under both systems, "
                        "nowhere otherwise)")
    parser.add_argument("--from-json", metavar="PATH", help="measure nothing: render a saved zoo.json again")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    parser.add_argument("--floors", action="store_true",
                        help="print tests/test_zoo.py's FLOORS table for this run (with --from-json: that run)")
    args = parser.parse_args(argv)
    names = _split_names(args.models)
    if args.list:
        for m in select():
            print(f"{m.name:20} {m.family:16} {'/'.join(m.modes):12} {m.description}")
        return 0
    from benchmarks import run, zoo_report

    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        if args.floors:
            print(zoo_report.floors_source(saved["rows"]))
            return 0
        out = args.out or os.path.dirname(os.path.abspath(args.from_json))
        for path in write(saved["rows"], out, started=saved.get("started"), finished=saved.get("finished"),
                          machine_info=saved.get("machine")):
            print(f"wrote {path}")
        return 0
    torch.set_num_threads(int(os.environ.get("BYTEGRAPH_BENCH_THREADS", "1")))
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    systems = tuple(s for s in args.systems.split(",") if s)
    rows = run_zoo(names, args.mode, systems=systems, timeout=args.timeout, in_process=args.in_process)
    print("\n".join(zoo_report.table_section({"rows": rows})))
    if args.floors:
        print(zoo_report.floors_source(rows))
    everything = not names and not args.mode and not args.in_process and set(systems) == {"torch", "bytegraph"}
    out = args.out or (run.RESULTS_DIR if everything else None)
    if out:
        for path in write(rows, out, started=started):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
