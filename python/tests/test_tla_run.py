"""`python -m tl_ascend.run` (the documented way to run an unmodified TileLang-Ascend script)
and scripts/run_tla_examples.py (its table over a directory of scripts), issue 29.

Before this change neither existed: `import tilelang` in a TileLang-Ascend script was a
ModuleNotFoundError unless the script's imports were edited.

The scripts are written here, in TileLang-Ascend's syntax, in a temporary directory: one that
passes its own check on the tails 1, 7, 33 and 1000 (torch reference), one whose own check
fails by assertion, one that prints its own failure line, one tl-ascend rejects, one that
crashes, one that checks nothing, one that never ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "run_tla_examples.py")

KERNEL = '''
import argparse
import torch
import torch_npu  # noqa: F401  (tl_ascend.torch_npu under the runner)
import tilelang
import tilelang.language as T

tilelang.cache.clear_cache()
torch.set_default_device("npu")


@tilelang.jit(out_idx=[-1], target="pto", pass_configs={tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True})
def scale_add(N, block=64, dtype="float"):
    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), Z: T.Tensor((N,), dtype)):
        with T.Kernel(tilelang.cdiv(N, block), threads=2) as cid:
            x = T.alloc_shared((block,), dtype)
            y = T.alloc_shared((block,), dtype)
            T.copy(X[cid * block], x)
            T.copy(Y[cid * block], y)
            for i in T.Parallel(block):
                x[i] = x[i] * 2.0 + y[i]
            T.copy(x, Z[cid * block])
    return main
'''

SCRIPTS = {
    "ok/pass.py": KERNEL + '''
parser = argparse.ArgumentParser()
parser.add_argument("--sizes", default="1,7,33,1000")
args = parser.parse_args()
for n in map(int, args.sizes.split(",")):
    x = torch.randn(n).npu()
    y = torch.randn(n).npu()
    torch.testing.assert_close(scale_add(n)(x, y), 2 * x + y)
print("Kernel Output Match!")
''',
    "ok/wrong_assert.py": KERNEL + '''
x, y = torch.randn(33), torch.randn(33)
torch.testing.assert_close(scale_add(33)(x, y), 3 * x + y)
print("Kernel Output Match!")
''',
    "ok/wrong_print.py": KERNEL + '''
x, y = torch.randn(7), torch.randn(7)
if torch.allclose(scale_add(7)(x, y), x + y):
    print("Kernel Output Match!")
else:
    print("[ERROR] Kernel Output Not Match!")
''',
    "ok/rejected.py": KERNEL.replace("x[i] = x[i] * 2.0 + y[i]", "x[i] = T.reinterpret(x[i], y[i])") + '''
scale_add(7)
''',
    # torch_npu's device names under the shim: torch.device("npu"), device="npu" on torch.randperm,
    # .to(torch.device("npu")) (before: RuntimeError "Expected one of cpu, cuda, ... device type").
    "ok/npu_device.py": KERNEL + '''
device = torch.device("npu")
x = torch.randn(1000, device=device)
y = torch.randn(1000).to(device)
perm = torch.randperm(1000, device="npu")
torch.testing.assert_close(scale_add(1000)(x[perm].contiguous(), y), 2 * x[perm] + y)
print("Kernel Output Match!")
''',
    # A torch_npu operator the shim has no CPU version of (before: a bare AttributeError, a crash).
    "ok/npu_op.py": "import torch\nimport torch_npu\ntorch_npu.npu_mla_prolog(torch.zeros(4))\n",
    # Its failure line printed on the way out of a compile tl-ascend rejected: a rejection
    # (before: classified "wrong" by the printed line, as gemm/example_gemm_tail_block_developer.py was).
    "ok/rejected_after_print.py": KERNEL.replace("x[i] = x[i] * 2.0 + y[i]", "x[i] = T.reinterpret(x[i], y[i])") + '''
try:
    scale_add(7)
except Exception as e:
    print("error message:", e)
    print("Failed test case 1/1: N=7")
    raise
''',
    "ok/crash.py": "import tilelang\nprint(1 / 0)\n",
    "ok/nocheck.py": "import tilelang\nprint(tilelang.math.next_power_of_2(1000))\n",
    "slow/forever.py": "import time\nimport tilelang\ntime.sleep(600)\n",
    "spin/forever.py": "import tilelang\nwhile True:\n    pass\n",
    # Both AIVs store Z with no order between them, AIV1 different bytes (2x + 1, AIV0 2x): right
    # in fast mode (program order: AIV1's store lands last), a WAW race on the chip.
    "hazard/racy.py": '''
import torch
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def k(N):
    @T.prim_func
    def main(X: T.Tensor((N,), "float"), Z: T.Tensor((N,), "float")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((N,), "float")
            with T.Scope("V"):
                T.copy(X, x)
                T.set_flag("mte2", "v", 0)
                T.wait_flag("mte2", "v", 0)
                T.tile.add(x, x, x)
                T.pipe_barrier("v")
                T.tile.add(x, x, T.cast(vid, "float32"))
                T.set_flag("v", "mte3", 0)
                T.wait_flag("v", "mte3", 0)
                T.copy(x, Z)
    return main


x = torch.randn(64)
torch.testing.assert_close(k(64)(x), 2 * x + 1)
print("Kernel Output Match!")
''',
    # Both AIVs store the same bytes (2x) to Z, unordered: the chip's Z is 2x whichever lands last,
    # a duplicate store (a remark of the hazard checker, docs/virtual_npu.md).
    "duplicate/same_bytes.py": '''
import torch
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def k(N):
    @T.prim_func
    def main(X: T.Tensor((N,), "float"), Z: T.Tensor((N,), "float")):
        with T.Kernel(1, is_npu=True) as (cid, vid):
            x = T.alloc_ub((N,), "float")
            with T.Scope("V"):
                T.copy(X, x)
                T.set_flag("mte2", "v", 0)
                T.wait_flag("mte2", "v", 0)
                T.tile.add(x, x, x)
                T.set_flag("v", "mte3", 0)
                T.wait_flag("v", "mte3", 0)
                T.copy(x, Z)
    return main


for n in (8, 64, 1000):
    x = torch.randn(n)
    torch.testing.assert_close(k(n)(x), 2 * x)
print("Kernel Output Match!")
''',
}


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("tla_examples")
    for rel, text in SCRIPTS.items():
        path = root / rel
        path.parent.mkdir(exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return str(root)


def run(args: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600, env=env, cwd=cwd)


def test_an_unmodified_script_runs_through_tl_ascend_run(scripts: str) -> None:
    r = run(["-m", "tl_ascend.run", os.path.join(scripts, "ok", "pass.py"), "--sizes", "1,7,33,1000"])
    assert r.returncode == 0, r.stderr
    assert "Kernel Output Match!" in r.stdout


@pytest.mark.parametrize("given", [None, "ACTIVE"])
def test_torchs_openmp_workers_sleep_under_tl_ascend_run(tmp_path, given: str | None) -> None:
    # OMP_DISPLAY_ENV=VERBOSE makes libgomp print what it read when torch loaded it: under
    # PASSIVE its idle workers spin 0 times before sleeping (300,000 when the variable is unset,
    # 3e10 under ACTIVE), so they do not take the cores the virtual NPU runs on.
    script = tmp_path / "s.py"
    script.write_text("import torch\nprint(float(torch.ones(4).sum()))\n")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["OMP_DISPLAY_ENV"] = "VERBOSE"
    if given:
        env["OMP_WAIT_POLICY"] = given
    r = run(["-m", "tl_ascend.run", str(script)], env=env)
    assert r.returncode == 0 and r.stdout.strip() == "4.0", r.stderr
    assert f"GOMP_SPINCOUNT = '{'30000000000' if given else '0'}'" in r.stderr


def test_the_alias_is_for_that_process_only() -> None:
    r = run(["-c", "import tl_ascend, sys; import tl_ascend.alias; print('tilelang' in sys.modules)"])
    assert r.stdout.strip() == "False", r.stderr
    r = run(["-c", "import tl_ascend.alias as a; a.install(); import tilelang, tilelang.language as T, torch_npu; "
                   "import tl_ascend; print(tilelang is tl_ascend, T is tl_ascend.language, a.installed())"])
    assert r.stdout.strip() == "True True True", r.stderr


def test_a_missing_tilelang_module_is_an_error_naming_it(tmp_path) -> None:
    script = tmp_path / "s.py"
    script.write_text("from tilelang.carver import arch\n")
    r = run(["-m", "tl_ascend.run", str(script)])
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert "UnsupportedModuleError" in last and "s.py:1: module 'tilelang.carver' is not in tl-ascend" in last


def test_a_real_tilelang_is_never_taken_over_silently(tmp_path, scripts: str) -> None:
    (tmp_path / "tilelang").mkdir()
    (tmp_path / "tilelang" / "__init__.py").write_text("REAL = True\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    script = os.path.join(scripts, "ok", "nocheck.py")
    r = run(["-m", "tl_ascend.run", script], env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert "a real 'tilelang' is installed (" + str(tmp_path / "tilelang") in r.stderr and "--force" in r.stderr
    r = run(["-m", "tl_ascend.run", "--force", script], env=env)
    assert r.returncode == 0 and r.stdout.strip() == "1024", r.stderr


def test_the_runner_classifies_each_script_by_its_own_verdict(scripts: str) -> None:
    r = run([RUNNER, scripts, "--only", "ok", "--json", "--timeout", "300", "--jobs", "2"])
    assert r.returncode == 0, r.stderr
    got = {x["script"]: (x["status"], x["reason"]) for x in json.loads(r.stdout)["results"]}
    assert got[os.path.join("ok", "pass.py")] == ("pass", "Kernel Output Match!")
    status, reason = got[os.path.join("ok", "wrong_assert.py")]
    assert status == "wrong" and reason.startswith("AssertionError: Tensor-likes are not close!")
    assert got[os.path.join("ok", "wrong_print.py")] == ("wrong", "[ERROR] Kernel Output Not Match!")
    status, reason = got[os.path.join("ok", "rejected.py")]
    assert status == "rejected" and "T.reinterpret is not in tl-ascend" in reason, reason
    status, reason = got[os.path.join("ok", "rejected_after_print.py")]
    assert status == "rejected" and "T.reinterpret is not in tl-ascend" in reason, reason
    assert got[os.path.join("ok", "crash.py")] == ("crash", "ZeroDivisionError: division by zero")
    assert got[os.path.join("ok", "nocheck.py")] == ("no-check", "1024")
    assert got[os.path.join("ok", "npu_device.py")] == ("pass", "Kernel Output Match!")
    status, reason = got[os.path.join("ok", "npu_op.py")]
    assert status == "rejected" and reason.startswith("UnknownNameError: npu_op.py:3: torch_npu.npu_mla_prolog "
                                                      "is not in tl-ascend: tl_ascend.torch_npu has no CPU version"), reason


def test_the_runner_takes_single_scripts_in_only(scripts: str) -> None:
    only = ",".join([os.path.join("ok", "pass.py"), os.path.join("ok", "crash.py")])
    r = run([RUNNER, scripts, "--only", only, "--json", "--timeout", "300"])
    assert r.returncode == 0, r.stderr
    got = {x["script"]: x["status"] for x in json.loads(r.stdout)["results"]}
    assert got == {os.path.join("ok", "crash.py"): "crash", os.path.join("ok", "pass.py"): "pass"}, got


def test_the_runner_kills_a_script_at_its_timeout(scripts: str) -> None:
    r = run([RUNNER, scripts, "--only", "slow", "--timeout", "3", "--blockers"])
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith(os.path.join("slow", "forever.py")))
    assert row.split()[1] == "timeout" and "still running after 3 s" in row
    # The progress line of the finished script, on stderr while the run goes on.
    progress = [line.split() for line in r.stderr.splitlines() if line.startswith("[")]
    assert [p[:2] + p[4:5] for p in progress] == [["[1/1]", "timeout", os.path.join("slow", "forever.py")]], r.stderr
    assert any(line.split()[:2] == ["slow", "0"] and line.split()[5] == "1" for line in r.stdout.splitlines())


def test_the_runner_stops_a_script_at_its_cpu_timeout_and_reports_cpu_seconds(scripts: str) -> None:
    # A script spinning on the CPU is stopped by RLIMIT_CPU after 2 CPU seconds (SIGXCPU), long
    # before the wall timeout, however busy the machine is.
    r = run([RUNNER, scripts, "--only", "spin", "--json", "--timeout", "600", "--cpu-timeout", "2"])
    assert r.returncode == 0, r.stderr
    (spin,) = json.loads(r.stdout)["results"]
    assert spin["status"] == "timeout" and spin["reason"] == "used 2 CPU seconds without finishing", spin
    assert 1.5 <= spin["cpu_seconds"] < 10.0 and spin["seconds"] < 600, spin  # the kernel counts in ticks
    bad = run([RUNNER, scripts, "--cpu-timeout", "0"])
    assert bad.returncode != 0 and "--cpu-timeout must be > 0" in bad.stderr


MOE_CHECK = '''
import sys
import torch
import tl_ascend
import tl_ascend.torch_npu as torch_npu

torch.manual_seed(0)
for num_tokens in (1, 7, 33, 1000):
    for dtype in (torch.float32, torch.float16):
        topk, experts, hidden = 4, 8, 16
        tokens = torch.randn(num_tokens, hidden, dtype=dtype)
        indices = torch.randint(0, experts, (num_tokens, topk), dtype=torch.int32)
        permuted, sorted_idx = torch_npu.npu_moe_token_permute(tokens, indices)
        # Rows grouped by expert, in token order within an expert (a stable sort of the flat ids).
        order = sorted(range(num_tokens * topk), key=lambda i: (int(indices.reshape(-1)[i]), i))
        assert torch.equal(permuted, tokens[torch.tensor(order) // topk])
        assert sorted_idx.dtype == torch.int32 and torch.equal(sorted_idx[torch.tensor(order)].long(),
                                                               torch.arange(num_tokens * topk))
        # Unpermute with probs undoes it: each token is the probs-weighted sum of its topk copies.
        probs = torch.rand(num_tokens, topk, dtype=dtype)
        back = torch_npu.npu_moe_token_unpermute(permuted, sorted_idx, probs)
        ref = (tokens.float() * probs.float().sum(1, keepdim=True)).to(dtype)
        torch.testing.assert_close(back, ref, rtol=1e-2, atol=1e-2)
        # num_out_tokens keeps the first rows; unpermute then drops the clipped copies.
        keep = max(1, num_tokens * topk // 3)
        clipped, clipped_idx = torch_npu.npu_moe_token_permute(tokens, indices, num_out_tokens=keep)
        assert torch.equal(clipped, permuted[:keep]) and torch.equal(clipped_idx, sorted_idx)
        # topK = 1 without probs: the plain inverse.
        one, one_idx = torch_npu.npu_moe_token_permute(tokens, indices[:, 0])
        assert torch.equal(torch_npu.npu_moe_token_unpermute(one, one_idx), tokens)
try:
    torch_npu.npu_moe_token_permute(tokens, indices, padded_mode=True)
except tl_ascend.Error as e:
    assert "padded_mode=True is not supported" in str(e)
else:
    sys.exit("padded_mode accepted")
print("ok")
'''


def test_torch_npu_moe_token_permute_and_unpermute_follow_their_formulas() -> None:
    # Before: AttributeError: module 'tl_ascend.torch_npu' has no attribute 'npu_moe_token_permute'
    # (the reference of the four moe_token_permute example scripts). Checked against properties
    # that do not restate the formula: grouping by expert, the inverse permutation, the probs-weighted
    # round trip, the clip; tails 1, 7, 33, 1000 tokens.
    r = run(["-c", MOE_CHECK])
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


INT32_TARGETS_CHECK = '''
import torch
import torch.nn.functional as F
import tl_ascend.torch_npu  # noqa: F401

torch.manual_seed(0)
for n in (1, 7, 33, 1000, 4097):
    for C in (1, 7, 64):
        x = torch.randn(n, C)
        y = torch.randint(0, C, (n,))
        want = torch.nn.functional.log_softmax(x, -1).gather(1, y[:, None])[:, 0].neg()
        got = torch.nn.CrossEntropyLoss(reduction="none")(x, y.to(torch.int32))
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(F.cross_entropy(x, target=y.int(), reduction="sum"), want.sum())
        torch.testing.assert_close(F.nll_loss(torch.log_softmax(x, -1), y.int(), reduction="none"), want)
try:  # other dtypes reach torch as given: its own error, never a silent conversion
    F.cross_entropy(torch.randn(4, 3), torch.zeros(4, dtype=torch.int16))
except RuntimeError:
    pass
else:
    raise SystemExit("an int16 target was accepted")
print("ok")
'''


def test_torch_npu_shim_takes_int32_class_indices_as_torch_npu_does() -> None:
    # cross_entropy_loss/example_cross_entro.py's reference passes int32 targets, which torch_npu
    # accepts. Before: RuntimeError "expected target dtype to be Long or Byte, but got Int" (torch's
    # CPU kernel), in the script's own reference. The widening to int64 is exact: torch's values.
    r = run(["-c", INT32_TARGETS_CHECK])
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


RNG_STATE_CHECK = r'''
import torch
import tl_ascend.torch_npu  # noqa: F401
torch.manual_seed(3)
with torch.random.fork_rng(device_type="npu"):
    torch.npu.manual_seed(99)
    torch.randn(8)
after = torch.randn(4)
torch.manual_seed(3)
assert torch.equal(after, torch.randn(4)), "fork_rng did not restore the RNG"
state = torch.npu.get_rng_state()
a = torch.randn(4)
torch.npu.set_rng_state(state)
assert torch.equal(a, torch.randn(4))
torch.npu.manual_seed(5)  # the npu RNG is the CPU's
b = torch.randn(4)
torch.manual_seed(5)
assert torch.equal(b, torch.randn(4))
print("ok")
'''


def test_torch_npu_shim_saves_and_restores_the_npu_rng() -> None:
    # torch's own code saves the renamed "npu" backend's RNG through torch.npu.get_rng_state
    # (fork_rng, and torch.library.opcheck's freeze_rng_state). Before: AttributeError
    # "'_NpuNamespace' object has no attribute 'get_rng_state'", which failed opcheck of
    # cann_ops_tilelang's operators whenever the shim was installed in the same process. A first
    # fix had torch.manual_seed warn (the module lacked _is_in_bad_fork), then recurse without end
    # (the backend's manual_seed_all called torch.manual_seed): warnings are errors here.
    r = run(["-W", "error", "-c", RNG_STATE_CHECK])
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


COMPILE_CHECK = r'''
import torch
import tl_ascend.torch_npu  # noqa: F401
assert torch.npu.is_available()  # what scripts see
x = torch.randn(5, device="npu")
got = torch.compile(lambda t: torch.sin(t) + 1, fullgraph=True)(x)
torch.testing.assert_close(got, torch.sin(x) + 1)
print("ok")
'''


def test_torch_compile_works_with_the_torch_npu_shim_installed() -> None:
    # The renamed PrivateUse1 backend made torch.compile treat "npu" as a real accelerator. Before:
    # InternalTorchDynamoError "No module named 'torch.npu'", then "PyTorch is not linked with
    # support for npu devices" (it asked the backend for a stream), then "type object 'Tensor' has
    # no attribute 'is_npu'"; this failed cann_ops_tilelang's torch.compile test whenever an earlier
    # test in the same process had installed the shim.
    r = run(["-c", COMPILE_CHECK])
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_the_runner_runs_scripts_under_the_hazard_checker_on_request(scripts: str) -> None:
    # The issue asks for every script to pass "with the hazard checker quiet"; before, the runner had
    # no way to turn it on (TL_CHECK_HAZARDS did not exist), so this racy script counted as a pass.
    def status(*flags: str) -> tuple[str, str]:
        r = run([RUNNER, scripts, "--only", "hazard", "--json", "--timeout", "300", *flags])
        assert r.returncode == 0, r.stderr
        row = json.loads(r.stdout)["results"][0]
        return row["status"], row["reason"]

    assert status()[0] == "pass"
    got, reason = status("--check-hazards")
    # The one pair: the two AIVs' stores of different bytes to Z (WAW on GM).
    assert got == "rejected" and "hazard check of kernel main: 1 unordered access pair(s)" in reason, reason


def test_identical_stores_of_two_cores_pass_the_checker_with_a_remark(scripts: str) -> None:
    # Before: rejected, "WAW hazard on GM: copy (MTE3, block 0 AIV1) writes Z ... is not ordered
    # after copy (MTE3, block 0 AIV0)", though the chip's Z is right whichever store lands last
    # (gemm_intrinsic, gemm_persistent, moe_token_permute, deepseek_v4 sparse_attention). A
    # different byte in one store stays an error (the racy script above, and tests/npu).
    r = run([RUNNER, scripts, "--only", "duplicate", "--json", "--timeout", "300", "--check-hazards"])
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)["results"][0]
    assert row["status"] == "pass", row
    assert "3 duplicate-store remark(s)" in row["reason"], row["reason"]


def test_tl_check_hazards_must_be_0_or_1(tmp_path) -> None:
    script = tmp_path / "k.py"
    script.write_text("import tl_ascend\n"
                      "import tl_ascend.language as T\n\n\n"
                      "@T.prim_func\n"
                      "def main(X: T.Tensor((8,), 'float')):\n"
                      "    with T.Kernel(1, is_npu=True) as (cid, vid):\n"
                      "        pass\n\n\n"
                      "tl_ascend.compile(main)\n")
    r = run([str(script)], env={**os.environ, "TL_CHECK_HAZARDS": "yes"})
    assert r.returncode != 0 and "TL_CHECK_HAZARDS must be 0 or 1, got 'yes'" in r.stderr, r.stderr


def test_a_printed_kernel_source_comment_is_not_a_verdict() -> None:
    # get_kernel_source() under tl_ascend.run returns an emitter error as "// ..." lines; one
    # saying "rows that do not match" made a passing script "wrong" (example_sparse_flash_attn_mask_pa.py).
    import importlib.util
    spec = importlib.util.spec_from_file_location("run_tla_examples", RUNNER)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["run_tla_examples"] = mod  # its dataclass looks its module up
    spec.loader.exec_module(mod)
    out = "// k.py:172: AscendC emitter: T.copy from GM rows that do not match the L1 region\ninit successful!\nTest Passed!\n"
    assert mod.classify(0, out, "", False) == ("pass", "Test Passed!")
    assert mod.classify(0, "// a comment\n[ERROR] Kernel Output Not Match!\n", "", False) == \
        ("wrong", "[ERROR] Kernel Output Not Match!")
