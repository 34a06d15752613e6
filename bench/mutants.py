"""The planted-bug check: apply each planted bug (a one-line change of the source) on its own, run
the tests that should notice it, and report which ones the suite catches.

    python bench/mutants.py              # every planted bug (several minutes)
    python bench/mutants.py -k sigma     # only those whose name contains "sigma"
    python bench/mutants.py --list       # check that every bug still applies, run nothing
    python bench/mutants.py --write      # also record the score in bench/README_mutants.md

A bug is *caught* when its tests fail (pytest exit 1), *not caught* when they pass. A planted bug
whose text no longer occurs in the source (the code moved on) is reported as *stale*: rewrite it.
Files are changed in place and always restored (also on Ctrl-C); the script refuses to start when a
file it would change has uncommitted edits. Runs outside the normal test run: it is slow.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Bug:
    name: str
    path: str          # relative to the repository
    old: str           # must occur exactly once
    new: str
    tests: tuple[str, ...]
    what: str


BUGS = [
    Bug("names-head-off-by-one", "symblock/engine/names.py",
        "head, part = int(h.group(2)), h.group(4)", "head, part = int(h.group(2)) + 1, h.group(4)",
        ("tests/engine/test_names.py",),
        "a head step's name is read as the next head's"),
    Bug("kinds-values-shaped-as-queries", "symblock/engine/kinds.py",
        'Kind("v", _v, _d_model, "linear", "linear"),', 'Kind("v", _qk, _d_model, "linear", "linear"),',
        ("tests/engine/test_kinds.py",),
        "V takes the width heads·d_k of Q and K instead of heads·d_v"),
    Bug("kinds-weights-cost-no-exp", "symblock/engine/kinds.py",
        'Kind("weights", _square, _const(1 + NODE), "softmax", "weights"),',
        'Kind("weights", _square, _const(0), "softmax", "weights"),',
        ("tests/engine/test_kinds.py", "tests/engine/test_spec_errors.py"),
        "the size guard counts a softmax weight as one node, forgetting its exp and division"),
    Bug("check-variance-around-exact-mean", "symblock/grading/recompute.py",
        'return centred_var(env[ins[0]], env[f"{norm_prefix(name)}.mean"])',
        "return centred_var(env[ins[0]], row_mean(env[ins[0]]))",
        ("tests/grading/test_check.py",),
        "the checker recomputes a variance around the exact row mean, not the person's own"),
    Bug("marking-tie-rejects-both-neighbours", "symblock/grading/points.py",
        "return _within(entry.value, value, Fraction(1, 2 * 10 ** places))", "return False",
        ("tests/grading/test_marking.py",),
        "an answer next to an undecidable rounding tie is marked wrong"),
    Bug("key-sigma-line-prints-variance", "symblock/sheets/work_norm.py",
        "+ self.outcome(exact.sqrt(a.value + eps_val), step.value.rows[i][0], a.exact, aligned=True))",
        "+ self.outcome(a.value + eps_val, v.rows[i][0], a.exact, aligned=True))",
        ("tests/sheets/test_key_numbers.py",), "the key's σ line ends in σ² instead of σ"),
    Bug("key-norm-rows-one-place-short", "symblock/sheets/builder.py",
        "cells = [None if c is None else dec_tex(c, self.places) for c in computed]",
        "cells = [None if c is None else dec_tex(c, self.places - 1) for c in computed]",
        ("tests/sheets/test_key_numbers.py",), "the key's normalised rows are rounded one place short"),
    Bug("softmax-sign", "symblock/engine/block.py",
        "cache[key] = exact.exp(s)", "cache[key] = exact.exp(-s)",
        ("tests/engine/test_block.py",), "softmax of −S instead of S"),
    Bug("layernorm-sample-variance", "symblock/engine/block.py",
        "lambda: (x - mu).map_rows(lambda r: [exact.dot(r, r) / d]))",
        "lambda: (x - mu).map_rows(lambda r: [exact.dot(r, r) / max(d - 1, 1)]))",
        ("tests/engine/test_block.py",), "LayerNorm with the sample (n − 1) variance"),
    Bug("linear-weight-transposed", "symblock/engine/block.py",
        "y = x @ self.params[w]\n", "y = x @ self.params[w].T\n",
        ("tests/engine/test_block.py",), "x Wᵀ instead of x W in every linear layer"),
    Bug("no-1/sqrt(dk)", "symblock/engine/block.py",
        "lambda s=s: s.scale(1 / exact.sqrt(t.num(hi - lo))))", "lambda s=s: s.scale(exact.ONE))",
        ("tests/engine/test_block.py",), "the scaled scores are not divided by √d_k"),
    Bug("causal-mask-off-by-one", "symblock/engine/steps.py",
        "(causal and j > i)", "(causal and j > i + 1)",
        ("tests/engine/test_block.py",), "the causal mask lets a token see the next one"),
    Bug("eps-outside-the-root", "symblock/engine/block.py",
        "return m.map(lambda v: exact.sqrt(v + eps))", "return m.map(lambda v: exact.sqrt(v) + eps)",
        ("tests/engine/test_block.py",), "σ = √σ² + ε instead of √(σ² + ε)"),
    Bug("gelu-tanh-constant", "symblock/engine/block.py",
        "sympy.Rational(44715, 1000000)", "sympy.Rational(4471, 100000)",
        ("tests/engine/test_block.py",), "GELU's tanh constant 0.04471 instead of 0.044715"),
    Bug("post-ln-residual-from-r1", "symblock/engine/block.py",
        "lambda: h1 + f)",
        "lambda: r1 + f)",
        ("tests/engine/test_block.py",), "Post-LN's second residual adds R_1 instead of H_1"),
    Bug("heads-concatenated-in-reverse", "symblock/engine/block.py",
        "lambda: Mat.hstack(outs))", "lambda: Mat.hstack(outs[::-1]))",
        ("tests/engine/test_block.py", "tests/reference/test_crosscheck.py"),
        "heads concatenated last first"),
    Bug("numpy-sample-variance", "symblock/reference/numeric.py",
        'var = t(f"{name}.var", lambda: np.mean((x - mean) ** 2, axis=1, keepdims=True))',
        'var = t(f"{name}.var", lambda: np.var(x, axis=1, ddof=1, keepdims=True))',
        ("tests/reference/test_numeric.py",), "the NumPy path's LayerNorm uses the sample variance"),
    Bug("numpy-softmax-sign", "symblock/reference/numeric.py",
        "e = np.exp(s - s.max(axis=1, keepdims=True))", "e = np.exp(s.min(axis=1, keepdims=True) - s)",
        ("tests/reference/test_numeric.py",), "the NumPy path's softmax of −S"),
    Bug("torch-no-1/sqrt(dk)", "symblock/reference/torch_ref.py",
        "lambda prev=prev: self[prev] / math.sqrt(dk))", "lambda prev=prev: self[prev] / 1.0)",
        ("tests/reference/test_torch_ref.py",), "the torch path's scaled scores are not scaled"),
    Bug("torch-layout-not-transposed", "symblock/engine/spec.py",
        'params[name] = m if (layout == "math" or is_vec) else m.T', "params[name] = m",
        ("tests/reference/test_numeric.py",), "`layout: torch` weights are read as (in, out)"),
    Bug("rounding-half-to-even", "symblock/engine/exact.py",
        "n = (2 * abs(p) * 10**places + q) // (2 * q)",
        "n = round(Fraction(abs(p) * 10**places, q))",
        ("tests/engine/test_exact.py", "tests/grading/test_check.py"),
        "exact decimals round half to even instead of half away from zero"),
    Bug("answers-judged-at-declared-places", "symblock/grading/answers.py",
        "places = max(decimals, written)", "places = decimals",
        ("tests/grading/test_check.py",), "an answer with extra places is judged at the declared ones"),
    Bug("carried-reported-as-correct", "symblock/grading/marking.py",
        "if needed_own and built_on:\n        return StepResult(it.name, CARRIED",
        "if False:\n        return StepResult(it.name, CARRIED",
        ("tests/grading/test_check.py",), "an error carried forward is reported as correct"),
    Bug("relu-gradient-at-zero", "symblock/calculus/grad.py",
        "return exact.ONE if exact.sign(z) > 0 else exact.ZERO",
        "return exact.ONE if exact.sign(z) >= 0 else exact.ZERO",
        ("tests/calculus/test_grad.py",), "ReLU's derivative at exactly 0 is 1 (torch: 0)"),
    Bug("softmax-gradient-sign", "symblock/calculus/grad_attention.py",
        "rows.append([pj * (dj - inner) for pj, dj in zip(p, dp)])",
        "rows.append([pj * (dj + inner) for pj, dj in zip(p, dp)])",
        ("tests/calculus/test_grad.py",), "softmax's backward adds Σ P dP instead of subtracting it"),
    Bug("params-attention-bias-forgotten", "symblock/calculus/params.py",
        'add(f"{pre}b_{p}", "attention", ("1", shape[1]))', "pass",
        ("tests/calculus/test_params.py",), "the parameter count leaves out b_Q, b_K, b_V, b_O"),
    Bug("generator-softmax-ties-allowed", "symblock/exercises/checks.py",
        "if c.softmax_distinct and src in steps:", "if False:",
        ("tests/exercises/test_generate.py",), "`softmax_distinct: true` lets equal scores through"),
    # ---- engine
    Bug("cross-keys-from-the-decoder", "symblock/engine/cross.py",
        'k = _proj(t, "cross.k", "K", MEMORY_TEX, m)', 'k = _proj(t, "cross.k", "K", MEMORY_TEX, x)',
        ("tests/engine/test_cross.py",), "the cross-attention's keys are taken from the decoder, not the memory"),
    Bug("mask-fill-any-negative", "symblock/grading/answers.py",
        'return v is not None and getattr(v, "is_rational", False) and v.q <= FILL_LIMIT',
        'return v is not None and getattr(v, "is_rational", False) and v.q < 0',
        ("tests/grading/test_mask_fill.py",), "any negative number written in a masked score passes as −∞"),
    Bug("rmsnorm-mean-square-over-d-plus-1", "symblock/engine/block.py",
        "lambda: x.map_rows(lambda r: [exact.dot(r, r) / d]))",
        "lambda: x.map_rows(lambda r: [exact.dot(r, r) / (d + 1)]))",
        ("tests/engine/test_block.py",), "RMSNorm's mean square divides by d + 1"),
    Bug("padding-mask-ignored", "symblock/engine/steps.py",
        "(causal and j > i) or bool(pad and pad[j])", "(causal and j > i)",
        ("tests/engine/test_attention_forms.py",), "padding keys are not masked"),
    Bug("silu-sign", "symblock/engine/block.py",
        "return x / (1 + exact.exp(-x))", "return x / (1 + exact.exp(x))",
        ("tests/engine/test_block.py",), "SiLU(z) = z / (1 + e^z) instead of z / (1 + e^−z)"),
    # ---- reference
    Bug("numpy-gelu-tanh-constant", "symblock/reference/numeric.py",
        "(x + 0.044715 * x ** 3)", "(x + 0.04471 * x ** 3)",
        ("tests/reference/test_numeric.py",), "the NumPy path's GELU tanh constant 0.04471"),
    Bug("numpy-padding-masks-rows", "symblock/reference/numeric.py",
        "out[:, pad] = -np.inf", "out[pad, :] = -np.inf",
        ("tests/reference/test_numeric.py", "tests/reference/test_attention_crosscheck.py"),
        "the NumPy path masks a padding query's row instead of the key's column"),
    Bug("numpy-sigmoid-branches-swapped", "symblock/reference/numeric.py",
        "return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))",
        "return np.where(x >= 0, e / (1.0 + e), 1.0 / (1.0 + e))",
        ("tests/reference/test_numeric.py",), "the NumPy path's sigmoid is σ(−|x|) for x ≥ 0"),
    # ---- calculus
    Bug("silu-gradient", "symblock/calculus/grad.py",
        "return s * (1 + z * (1 - s))", "return s * (1 + z * s)",
        ("tests/calculus/test_grad.py",), "SiLU's derivative s(1 + z s) instead of s(1 + z(1 − s))"),
    Bug("scaled-gradient-not-scaled", "symblock/calculus/grad_attention.py",
        "return {s: g.scale(1 / exact.sqrt(exact.real(spec.dims.d_head)))} if want(s) else {}",
        "return {s: g} if want(s) else {}",
        ("tests/calculus/test_grad.py",), "the backward of the 1/√d_k scale forgets the factor"),
    Bug("dropout-gradient-not-rescaled", "symblock/calculus/grad.py",
        "return {src: (g * keep).scale(num(1 / (1 - spec.dropout_p)))}", "return {src: g * keep}",
        ("tests/calculus/test_grad.py",), "dropout's backward forgets the 1/(1 − p)"),
    Bug("params-norm-beta-forgotten", "symblock/calculus/params.py",
        'add(f"{ln}.beta", "norm", ("1", "d"))', "pass",
        ("tests/calculus/test_params.py",), "the parameter count leaves out every LayerNorm β"),
    # ---- exercises (the generator's bounds)
    Bug("generator-softmax-upper-bound-dropped", "symblock/exercises/checks.py",
        "if not (at_least(w, lo) and at_most(w, hi)):", "if not at_least(w, lo):",
        ("tests/exercises/test_exact_bounds.py",),
        "the exact softmax_weights check keeps only its lower bound (irrational σ goes unseen)"),
    Bug("generator-norm-min-halved", "symblock/exercises/checks.py",
        "if c.norm_min and not at_least(root[i][0], c.norm_min):",
        "if c.norm_min and not at_least(root[i][0], c.norm_min / 2):",
        ("tests/exercises/test_exact_bounds.py",), "the exact norm_min (σ ≥ bound) check allows σ down to half the bound"),
    Bug("generator-softmax-lower-bound-over-half-allowed", "symblock/exercises/checks.py",
        "if c.softmax_weights and c.softmax_weights[0] * 2 > 1 and dims.seq_len > 1:",
        "if c.softmax_weights and c.softmax_weights[0] * 2 > 2 and dims.seq_len > 1:",
        ("tests/exercises/test_exact_bounds.py",), "a lower softmax bound above 1/2, which no row can meet, is not refused before drawing"),
    Bug("generator-softmax-upper-bound-above-one-allowed", "symblock/exercises/constraints.py",
        'kw["softmax_weights"][1] <= 1)', 'kw["softmax_weights"][1] <= 2)',
        ("tests/exercises/test_exact_bounds.py",), "softmax_weights with an upper bound above 1 is accepted"),
    Bug("generator-x-step-denominator-bound", "symblock/exercises/constraints.py",
        "if step <= 0 or step.denominator > 100:", "if step <= 0 or step.denominator > 1000:",
        ("tests/exercises/test_exact_bounds.py",), "random.x_step with a denominator over 100 is accepted"),
    # ---- sheets (language labels)
    Bug("zh-causal-mask-label-says-no-mask", "symblock/sheets/lang.py",
        '"mask_on": "因果掩码",', '"mask_on": "无掩码",',
        ("tests/sheets/test_lang_labels.py",), "a zh sheet of a causal block describes it as having no mask"),
    Bug("en-causal-mask-label-says-no-mask", "symblock/sheets/lang.py",
        '"mask_on": "causal mask",', '"mask_on": "no mask",',
        ("tests/sheets/test_lang_labels.py",),
        "an English sheet of a causal block describes it as having no mask"),
    Bug("zh-variance-label-says-sample", "symblock/sheets/lang.py",
        '"s.var": "${src}$ 每一行的总体方差。",', '"s.var": "${src}$ 每一行的样本方差。",',
        ("tests/sheets/test_lang_labels.py",), "the zh variance task asks for the sample variance"),
    Bug("en-layernorm-convention-divides-by-d-1", "symblock/sheets/lang.py",
        r"(divide by $d$, not $d-1$), $\\mathrm{{LN}}(x)_{{ij}} = \\frac{{x_{{ij}} - \\mu_i}}{{\\sqrt{{\\sigma_i^2 + \\varepsilon}}}} \\cdot \\gamma_j + \\beta_j$",
        r"(divide by $d-1$, not $d$), $\\mathrm{{LN}}(x)_{{ij}} = \\frac{{x_{{ij}} - \\mu_i}}{{\\sqrt{{\\sigma_i^2 + \\varepsilon}}}} \\cdot \\gamma_j + \\beta_j$",
        ("tests/sheets/test_lang_labels.py",),
        "the English conventions box tells the reader to divide the variance by d − 1"),
    # ---- grading
    Bug("slip-no-sqrt-is-the-right-scale", "symblock/grading/slips/__init__.py",
        "return scaled_by(name, env, spec, 1 / num(spec.dims.d_head))",
        "return scaled_by(name, env, spec, 1 / exact.sqrt(num(spec.dims.d_head)))",
        ("tests/grading/test_check_mistakes.py",), "the 'divided by d_k, not √d_k' slip is the correct value"),
    Bug("slip-unscaled-is-halved", "symblock/grading/slips/__init__.py",
        "return scaled_by(name, env, spec, exact.ONE)", "return scaled_by(name, env, spec, exact.ONE / 2)",
        ("tests/grading/test_check_mistakes.py",), "the 'scores not scaled' slip halves the scores"),
    # ---- commands
    Bug("params-bad-widths-exit-3", "symblock/commands/params.py",
        "        return 2\n    if args.json:", "        return 3\n    if args.json:",
        ("tests/calculus/test_params.py", "tests/calculus/test_params_widths.py"),
        "`params` with impossible widths exits 3 instead of 2"),
    Bug("worksheet-fixed-steps-not-named", "symblock/commands/worksheet.py",
        "    same = [n for n in asked if n in fixed]\n    if not same:",
        "    same = [n for n in asked if n in fixed]\n    if True:",
        ("tests/sheets/test_worksheet_sets.py::test_a_given_x_is_named_when_its_steps_repeat_on_every_sheet",),
        "a set's steps fixed by the spec are neither named nor refused"),
    # ---- the online softmax over key tiles
    Bug("tile-not-rescaled", "symblock/engine/online_softmax.py",
        "    return exact.exp(old - new)", "    return exact.ONE",
        ("tests/engine/test_tiles.py",),
        "a tile's running sum and accumulator are not rescaled by e^(m_old − m_new)"),
    Bug("numpy-tile-not-rescaled", "symblock/reference/numeric_tiles.py",
        "np.exp(m_old - safe), 0.0)", "1.0, 0.0)",
        ("tests/reference/test_tiles_crosscheck.py",),
        "the NumPy path's tiles are not rescaled when the running max grows"),
    Bug("tile-max-ignores-earlier-tiles", "symblock/engine/online_softmax.py",
        "best = NEG_INF if prev is None else prev.rows[i][0]", "best = NEG_INF",
        ("tests/engine/test_tiles.py",),
        "the running max forgets the earlier tiles' maximum"),
    Bug("proof-accepts-any-ratio", "symblock/engine/proof.py",
        "return None if mu is None else _times(mu, nb) == na", "return None if mu is None else True",
        ("tests/engine/test_tiles.py",),
        "the proof calls A/L and B/S equal whenever the denominators are proportional"),
]


def apply(bug: Bug) -> tuple[Path, str]:
    path = REPO / bug.path
    text = path.read_text(encoding="utf-8")
    n = text.count(bug.old)
    if n != 1:
        raise LookupError(f"{bug.path}: the text to change occurs {n} times")
    path.write_text(text.replace(bug.old, bug.new), encoding="utf-8")
    return path, text


def run_tests(bug: Bug) -> tuple[int, float]:
    # no stale bytecode: the changed file's .pyc is removed and none is written while it is changed
    Path(importlib.util.cache_from_source(str(REPO / bug.path))).unlink(missing_ok=True)
    env = dict(os.environ, CI="true", PYTHONDONTWRITEBYTECODE="1")
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                           *bug.tests], cwd=REPO, env=env, capture_output=True, text=True)
    return proc.returncode, time.perf_counter() - t


def dirty(paths: set[str]) -> list[str]:
    out = subprocess.run(["git", "status", "--porcelain", "--", *sorted(paths)], cwd=REPO,
                         capture_output=True, text=True).stdout
    return [line[3:] for line in out.splitlines()]


def check(bugs: list[Bug]) -> list[tuple[Bug, str, float]]:
    results = []
    for bug in bugs:
        try:
            path, original = apply(bug)
        except LookupError as e:
            results.append((bug, "stale", 0.0))
            print(f"  stale        {bug.name}: {e}", flush=True)
            continue
        try:
            code, secs = run_tests(bug)
        finally:
            path.write_text(original, encoding="utf-8")
        status = {0: "NOT CAUGHT", 1: "caught"}.get(code, f"error {code}")
        results.append((bug, status, secs))
        print(f"  {status:<12} {bug.name} ({secs:.0f} s: {' '.join(bug.tests)})", flush=True)
    return results


def report(results) -> str:
    caught = sum(s == "caught" for _, s, _ in results)
    lines = [f"Latest score: **{caught} of {len(results)} planted bugs caught** "
             f"({time.strftime('%Y-%m-%d')}, {sum(t for *_, t in results) / 60:.1f} min).", "",
             "| planted bug | what it breaks | result | tests run |", "|---|---|---|---|"]
    for bug, status, secs in results:
        lines.append(f"| `{bug.name}` | {bug.what} | {status} ({secs:.0f} s) | {', '.join(bug.tests)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-k", help="only planted bugs whose name contains this")
    p.add_argument("--list", action="store_true", help="check that every bug applies; run nothing")
    p.add_argument("--write", action="store_true", help="write the score into bench/README_mutants.md")
    args = p.parse_args(argv)
    bugs = [b for b in BUGS if not args.k or args.k in b.name]
    if args.list:
        stale = 0
        for bug in bugs:
            n = (REPO / bug.path).read_text(encoding="utf-8").count(bug.old)
            stale += n != 1
            print(f"  {'ok' if n == 1 else f'STALE ({n}×)':<12} {bug.name}: {bug.what}")
        return 1 if stale else 0
    edited = dirty({b.path for b in bugs})
    if edited:
        print(f"refusing to plant bugs into files with uncommitted edits: {', '.join(edited)}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # restore files on SIGTERM too
    results = check(bugs)
    text = report(results)
    print("\n" + text)
    if args.write:
        readme = REPO / "bench" / "README_mutants.md"
        old = readme.read_text(encoding="utf-8")
        new = re.sub(r"(<!-- mutants:start -->\n).*?(\n<!-- mutants:end -->)",
                     lambda m: m.group(1) + text + m.group(2), old, flags=re.S)
        readme.write_text(new, encoding="utf-8")
    return 0 if all(s == "caught" for _, s, _ in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
