"""The Python front end without a GPU (and without torch): the package
imports, validates its arguments before anything runs, and a Python
candidate's table goes through the worker host and libkgate's validation
(the list job runs on the CPU). Run by CTest as `python_frontend`; needs
KGATE_BIN (the kgate executable of the build under test)."""
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import kgate  # noqa: E402
from kgate import api  # noqa: E402

KGATE = os.environ.get("KGATE_BIN")


def top_level_fn(x):
    return x


def kb_dirs(d, problems, solutions):
    """A level directory and a solutions directory of empty files under d."""
    probs, sols = os.path.join(d, "level1"), os.path.join(d, "sols")
    for folder, names in ((probs, problems), (sols, solutions)):
        os.makedirs(folder)
        for name in names:
            open(os.path.join(folder, name), "w").close()
    return probs, sols


class ImportsAndArguments(unittest.TestCase):
    def test_no_torch_needed(self):
        self.assertNotIn("torch", sys.modules)

    def test_kernel_validation(self):
        with self.assertRaisesRegex(TypeError, "callable"):
            kgate.Kernel(3, op="relu", dtype="fp16")
        with self.assertRaisesRegex(ValueError, "dtype 'fp64'"):
            kgate.Kernel(abs, op="relu", dtype="fp64")
        with self.assertRaisesRegex(ValueError, "index_dtype"):
            kgate.Kernel(abs, op="argmax", dtype="fp16", index_dtype="int8")
        with self.assertRaisesRegex(ValueError, "name"):
            kgate.Kernel(abs, op="relu", dtype="fp16", name="has space")
        k = kgate.Kernel(abs, op="layer_norm", dtype="bf16", reads="eps")
        self.assertEqual(k.reads, ("eps",))
        self.assertEqual(k.name, "abs_bf16")

    def test_check_arguments(self):
        with self.assertRaisesRegex(TypeError, "callable"):
            kgate.check(None, op="relu")
        with self.assertRaisesRegex(ValueError, "op="):
            kgate.check(top_level_fn)
        with self.assertRaisesRegex(ValueError, "dtype"):
            kgate.check(top_level_fn, op="relu", dtype="int8")
        with self.assertRaisesRegex(ValueError, "shape"):
            kgate.check(top_level_fn, op="relu", shapes=[(0, 4)])
        with self.assertRaisesRegex(ValueError, "shape"):
            kgate.check(top_level_fn, op="relu", shapes=[" "])
        with self.assertRaisesRegex(ValueError, "lambda"):
            kgate.check(lambda x: x, op="relu")

        def inner(x):
            return x
        with self.assertRaisesRegex(ValueError, "inside a function"):
            kgate.check(inner, op="relu")
        with self.assertRaisesRegex(ValueError, "timeout"):
            kgate.check(top_level_fn, op="relu", timeout=-1)

    def test_check_problem_arguments(self):
        """kgate.check(fn, reference=, inputs=): validated before anything runs;
        the candidate file it writes defines the problem and imports all three
        callables by name."""
        with self.assertRaisesRegex(ValueError, "not both"):
            kgate.check(top_level_fn, op="relu", reference=top_level_fn, inputs=top_level_fn)
        with self.assertRaisesRegex(TypeError, "both be given"):
            kgate.check(top_level_fn, reference=top_level_fn)
        with self.assertRaisesRegex(ValueError, "lambda"):
            kgate.check(top_level_fn, reference=lambda x: x, inputs=top_level_fn)
        with self.assertRaisesRegex(ValueError, "name"):
            kgate.check(top_level_fn, reference=top_level_fn, inputs=top_level_fn, problem_name="has space")
        with self.assertRaisesRegex(ValueError, "family"):
            kgate.check(top_level_fn, reference=top_level_fn, inputs=top_level_fn, family="nope")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cand.py")
            src = api._callable_source(top_level_fn)
            k = kgate.Kernel(top_level_fn, "p1", None, name="mine")
            api.write_candidate(path, [(src[0], src[1], k)],
                                problem={"name": "p1", "inputs": src, "reference": src, "compile": False,
                                         "family": "gemm"})
            text = open(path).read()
            compile(text, path, "exec")
            self.assertIn("KGATE_PROBLEM = Problem('p1', inputs=load_attr(", text)
            self.assertIn("op='p1', dtype=None, name='mine'", text)

    def test_a_callable_from_stdin_is_refused_by_name(self):
        """A function defined in a script read from standard input (its
        module's file is "<stdin>") is refused in one line saying to define
        it in a .py file, not a FileNotFoundError on /tmp/<stdin>."""
        script = ("import kgate\ndef relu(x, y):\n    pass\n"
                  "try:\n    kgate.check(relu, op='relu', dtype='fp16')\nexcept ValueError as e:\n    print(e)\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
        r = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=60, env=env)
        self.assertIn("relu was not defined in a Python file (<stdin>)", r.stdout, r.stdout + r.stderr)
        self.assertIn("define it in a .py file", r.stdout)

    @unittest.skipIf(__import__("importlib.util").util.find_spec("torch") is not None, "torch is installed here")
    def test_kernelbench_without_torch_is_the_environment(self):
        """Without PyTorch for the workers, a KernelBench pair is not a bad
        candidate (exit 4) but the machine's lack (exit 5), said in one line
        that names the interpreter to fix; usage errors exit 3."""
        with tempfile.TemporaryDirectory() as d:
            p, s = os.path.join(d, "1_relu.py"), os.path.join(d, "1_relu_new.py")
            body = ("import torch\nclass {}(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                    "def get_inputs():\n    return [torch.randn(8)]\ndef get_init_inputs():\n    return []\n")
            with open(p, "w") as f:
                f.write(body.format("Model"))
            with open(s, "w") as f:
                f.write(body.format("ModelNew"))
            env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
            r = subprocess.run([sys.executable, "-m", "kgate", "kernelbench", p, s], capture_output=True, text=True,
                               timeout=120, env=env)
            self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
            self.assertIn("PyTorch is not installed for the workers' Python", r.stdout)
            u = subprocess.run([sys.executable, "-m", "kgate", "kernelbench"], capture_output=True, text=True,
                               timeout=60, env=env)
            self.assertEqual(u.returncode, 3, u.stderr)

    def test_kernelbench_jobs_per_gpu_argument(self):
        from kgate import kernelbench
        with tempfile.TemporaryDirectory() as d, mock.patch("sys.stderr", new_callable=io.StringIO) as err:
            self.assertEqual(kernelbench.main([d, d, "--gpus", "all", "--workdir", d, "--jobs-per-gpu", "5"]), 3)
        self.assertIn("--jobs-per-gpu: a whole number from 1 to 4", err.getvalue())

    def test_batch_arguments(self):
        with self.assertRaisesRegex(ValueError, "candidate"):
            kgate.batch([{"op": "relu"}], "r.jsonl")
        with self.assertRaisesRegex(TypeError, "manifest"):
            kgate.batch(3, "r.jsonl")
        with self.assertRaisesRegex(ValueError, "gpus"):
            kgate.batch("m.jsonl", "r.jsonl", gpus=[-1])
        for bad in (0, 5, "2", 1.5):
            with self.assertRaisesRegex(ValueError, "jobs_per_gpu"):
                kgate.batch("m.jsonl", "r.jsonl", jobs_per_gpu=bad)

    @unittest.skipUnless(KGATE, "KGATE_BIN is not set")
    def test_batch_runs_and_reads(self):
        with tempfile.TemporaryDirectory() as d:
            cands = []
            for i in range(5):
                p = os.path.join(d, f"c{i}.so")
                open(p, "w").close()
                cands.append({"candidate": p, "op": "relu"})
            out = os.path.join(d, "r.jsonl")
            env = {"KG_BATCH_RUNNER": os.path.join(HERE, "..", "fake_check.sh"), "KG_BATCH_GPUS": "2"}
            with mock.patch.dict(os.environ, env):
                rc, summary = kgate.batch(cands, out)
            self.assertEqual(rc, 0, summary)
            lines = list(kgate.read_batch(out))
            self.assertEqual(sorted(l["check"]["results"][0]["verdict"] for l in lines), ["OK"] * 5)
            self.assertIn("5 job(s) run", summary)
            # options reach every job's kgate check (the fake records its command line)
            out2 = os.path.join(d, "r2.jsonl")
            with mock.patch.dict(os.environ, env):
                rc, summary = kgate.batch(cands, out2, options=["--lib-cache", "--sandbox"])
            self.assertEqual(rc, 0, summary)
            cmds = [l["check"]["command"] for l in kgate.read_batch(out2)]
            self.assertEqual(len(cmds), 5)
            self.assertTrue(all(" --lib-cache --sandbox " in c for c in cmds), cmds)
            # jobs_per_gpu reaches kgate batch: two jobs at once on a GPU
            out3, conc = os.path.join(d, "r3.jsonl"), os.path.join(d, "conc")
            os.mkdir(conc)
            with mock.patch.dict(os.environ, dict(env, KG_BATCH_GPUS="1", KG_FAKE_CONC=conc, KG_FAKE_SLEEP="0.5")):
                rc, summary = kgate.batch(cands, out3, jobs_per_gpu=2)
            self.assertEqual(rc, 0, summary)
            with open(conc + ".log") as f:
                self.assertEqual(max(int(l.split()[1]) for l in f), 2)

    def test_kernelbench_groups_a_problems_solutions(self):
        """kgate kernelbench DIR DIR: one kgate check per problem for its
        solutions. One that does not load is an error entry and the run goes
        on; a run that stops in a kernel job blames the first solution left
        without a result and a new run takes the rest; one that stops before
        any kernel (the problem) fails them all once; --time-budget leaves the
        rest as errors; a file named twice is judged twice."""
        import ast
        from kgate import kernelbench
        from kgate._kernel import sha256_of
        calls, envs = [], []

        def call_of(path):
            with open(path) as f:
                tree = ast.parse(f.read())
            call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
            kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
            args = [ast.literal_eval(a) for a in call.args]
            if call.func.id == "candidate":
                return args[0], [args[1]], ["ModelNew"], kw["pins"]
            return args[0], args[1], kw["names"], kw["pins"]

        def fake_run_cli(args, json_path, timeout=None, env=None):
            prob, sols, names, pins = call_of(args[1])
            self.assertLessEqual({prob, *sols}, set(pins))  # pinned, with the whole batch
            calls.append([os.path.basename(s) for s in sols])
            envs.append(args[args.index("--pin-sha256") + 1] == sha256_of(args[1]))
            if "2_broken" in prob:  # the list job: nothing judged
                raise api.KgateError(4, f"kgate: {args[1]}: cannot import: ModuleNotFoundError: nosuch")
            results = []
            for s, n in zip(sols, names):
                b = os.path.basename(s)
                if "bad" in b:  # did not load: a CRASH whose reason carries the marker
                    results.append({"kernel": n, "verdict": "CRASH", "summaries": {},
                                    "reason": f"the kernel gave up: RuntimeError: {kernelbench.NOT_LOADED} {n}: "
                                              f"{s}: AttributeError: no ModelNew"})
                    continue
                if "forge" in b:  # a worker's forged error event stops the run mid-job
                    results.append({"kernel": n, "verdict": "SKIPPED", "summaries": {}})
                    raise api.KgateError(5, "kgate: forged", api.Report({"schema": "kgate.results/2",
                                                                           "results": results}, 5))
                if "late" in b:  # --time-budget reached before it
                    return api.Report({"schema": "kgate.results/2", "results": results,
                                       "incomplete": "--time-budget 9 s reached"}, 0)
                results.append({"kernel": n, "verdict": "SLOW" if "slow" in b else "OK",  # cliff: kgate's,
                                "summaries": {"cliff": {"value": 2.0}} if results else {}})  # vs the 1st
            return api.Report({"schema": "kgate.results/2", "results": results},
                              1 if any(r["verdict"] == "SLOW" for r in results) else 0)

        with tempfile.TemporaryDirectory() as d:
            probs, sols = kb_dirs(d, ("1_Square.py", "2_broken.py", "3_Sum.py", "4_Max.py"),
                                  ("1_a.py", "1_bad.py", "1_c_slow.py", "1_d_forge.py", "1_e.py", "2_x.py",
                                   "2_y.py", "3_only.py", "4_a.py", "4_b_late.py", "4_c.py"))
            with mock.patch.object(api, "run_cli", fake_run_cli):
                doc, code = kernelbench.batch(probs, sols)
            self.assertEqual(calls, [["1_a.py", "1_bad.py", "1_c_slow.py", "1_d_forge.py", "1_e.py"], ["1_e.py"],
                                     ["2_x.py", "2_y.py"], ["3_only.py"], ["4_a.py", "4_b_late.py", "4_c.py"]])
            self.assertTrue(envs and all(envs))  # every candidate file pinned as written
            self.assertEqual(sorted((os.path.basename(r["source"]), r["verdict"]) for r in doc["results"]),
                             [("1_a.py", "OK"), ("1_c_slow.py", "SLOW"), ("1_e.py", "OK"), ("3_only.py", "OK"),
                              ("4_a.py", "OK")])
            self.assertEqual(sorted((os.path.basename(e["solution"]), e["exit"]) for e in doc["errors"]),
                             [("1_bad.py", 4), ("1_d_forge.py", 5), ("2_x.py", 4), ("2_y.py", 4),
                              ("4_b_late.py", 5), ("4_c.py", 5)])
            self.assertIn("no ModelNew", next(e["message"] for e in doc["errors"] if "1_bad" in e["solution"]))
            self.assertIn("--time-budget", next(e["message"] for e in doc["errors"] if "4_c" in e["solution"]))
            self.assertEqual(code, 5)
            self.assertTrue(all("kernelbench" in r and "cliff" not in r["summaries"] for r in doc["results"]))

            calls.clear()
            with mock.patch.object(api, "run_cli", fake_run_cli):
                doc, _ = kernelbench.batch(probs, sols, group=False)
            self.assertEqual(len(calls), 11)  # --separate: one check per solution

            calls.clear()  # a file named twice is judged twice, under two names
            a = os.path.join(sols, "1_a.py")
            with mock.patch.object(api, "run_cli", fake_run_cli):
                rep, errs = kernelbench.judge_group(os.path.join(probs, "1_Square.py"), [a, a])
            self.assertEqual([r["kernel"] for r in rep.results], ["ModelNew.1_a", "ModelNew.1_a.1"])
            self.assertEqual(errs, [])

    def test_kernelbench_groups_through_batch(self):
        """--gpus: a problem's solutions in jobs of up to `group` (each a group
        candidate); each result back to its solution, one that did not load an
        error, the solutions of a job that stopped or never ran errors too."""
        import ast
        from kgate import kernelbench
        from kgate._kernel import sha256_of
        seen = {}

        def fake_batch(jobs, out, gpus="all", timeout=None, options=(), jobs_per_gpu=1):
            lines = []
            for j in jobs:
                with open(j["candidate"]) as f:
                    call = next(n for n in ast.walk(ast.parse(f.read())) if isinstance(n, ast.Call))
                kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
                sols = ast.literal_eval(call.args[1]) if call.func.id == "candidate_group" else \
                    [ast.literal_eval(call.args[1])]
                names = kw.get("names", ["ModelNew"])
                seen[j["id"]] = [os.path.basename(s) for s in sols]
                self.assertEqual(j["options"], ["--pin-sha256", sha256_of(j["candidate"])])
                if any("never" in s for s in sols):
                    continue  # the batch stopped before this job
                res = []
                for s, n in zip(sols, names):
                    if "bad" in s:
                        res.append({"kernel": n, "verdict": "CRASH", "summaries": {},
                                    "reason": f"RuntimeError: {kernelbench.NOT_LOADED} {n}: {s}: no ModelNew"})
                    elif "gpufail" in s:
                        res.append({"kernel": n, "verdict": "SKIPPED", "summaries": {}})
                        break
                    else:
                        res.append({"kernel": n, "verdict": "OK", "summaries": {}})
                stopped = any("gpufail" in s for s in sols)
                lines.append({"schema": "kgate.batch/1", "id": j["id"], "exit": 5 if stopped else 0,
                              "error": "kgate: GPU 1 fell off" if stopped else None,
                              "check": {"schema": "kgate.results/2", "results": res}})
            with open(out, "w") as f:
                f.writelines(json.dumps(x) + "\n" for x in lines)
            return 0, ""

        with tempfile.TemporaryDirectory() as d:
            sols10 = [f"1_s{i}.py" for i in range(10)]
            sols10[3] = "1_s3_bad.py"
            probs, sols = kb_dirs(d, ("1_Square.py", "2_Relu.py", "3_Sum.py", "4_Max.py"),
                                  tuple(sols10) + ("2_a.py", "2_b_gpufail.py", "2_c.py", "3_only.py",
                                                    "4_x_never.py", "4_y.py"))
            with mock.patch.object(api, "batch", fake_batch):
                doc, code = kernelbench.batch_gpus(probs, sols, os.path.join(d, "w"), "all", group=8)
            self.assertEqual(sorted(len(v) for v in seen.values()), [1, 2, 2, 3, 8])
            self.assertEqual(sorted(os.path.basename(r["source"]) for r in doc["results"]),
                             sorted([s for s in sols10 if "bad" not in s] + ["2_a.py", "3_only.py"]))
            self.assertEqual(sorted((os.path.basename(e["solution"]), e["exit"]) for e in doc["errors"]),
                             [("1_s3_bad.py", 4), ("2_b_gpufail.py", 5), ("2_c.py", 5), ("4_x_never.py", 5),
                              ("4_y.py", 5)])
            self.assertEqual(code, 5)
            self.assertEqual(next(e["message"] for e in doc["errors"] if "2_c" in e["solution"]),
                             "kgate: GPU 1 fell off")

    @unittest.skipUnless(KGATE, "KGATE_BIN is not set")
    def test_kernelbench_directories_through_batch(self):
        """kgate kernelbench DIR DIR --gpus: candidates written once, judged
        through kgate batch (a stand-in for each check here), and a rerun judges
        nothing again."""
        from kgate import kernelbench
        with tempfile.TemporaryDirectory() as d:
            probs, sols = kb_dirs(d, ("1_Square_matmul.py", "2_Relu.py", "3_Sum.py"),
                                  ("1_Square_matmul.py", "2_Relu.py", "7_Orphan.py"))
            log = os.path.join(d, "log")
            env = {"KG_BATCH_RUNNER": os.path.join(HERE, "..", "fake_check.sh"), "KG_BATCH_GPUS": "2",
                   "KG_FAKE_LOG": log}
            with mock.patch.dict(os.environ, env):
                doc, code = kernelbench.batch_gpus(probs, sols, os.path.join(d, "work"), "all")
                doc2, _ = kernelbench.batch_gpus(probs, sols, os.path.join(d, "work"), "all")
            self.assertEqual(len(doc["results"]), 2)
            self.assertTrue(all("kernelbench" in r for r in doc["results"]))
            self.assertEqual([e["solution"] for e in doc["errors"]], [os.path.join(sols, "7_Orphan.py")])
            self.assertEqual(code, 4)
            with open(log) as f:
                self.assertEqual(len(f.readlines()), 2)  # the rerun judged nothing again
            self.assertEqual(len(doc2["results"]), 2)
            # jobs_per_gpu reaches kgate batch: the two problems' jobs at once on one GPU
            conc = os.path.join(d, "conc")
            os.mkdir(conc)
            with mock.patch.dict(os.environ, dict(env, KG_BATCH_GPUS="1", KG_FAKE_CONC=conc, KG_FAKE_SLEEP="0.5")):
                doc3, _ = kernelbench.batch_gpus(probs, sols, os.path.join(d, "work3"), "all", jobs_per_gpu=2)
            self.assertEqual(len(doc3["results"]), 2)
            with open(conc + ".log") as f:
                self.assertEqual(max(int(l.split()[1]) for l in f), 2)

    def test_shape_forms(self):
        self.assertEqual(api._shape_arg((4096, 1024)), "4096x1024")
        self.assertEqual(api._shape_arg(512), "512")
        self.assertEqual(api._shape_arg("large"), "large")
        with self.assertRaises(ValueError):
            api._shape_arg(True)

    def test_generated_candidate_imports_by_name(self):
        with tempfile.TemporaryDirectory() as d:
            cand = os.path.join(d, "candidate.py")
            k = kgate.Kernel(top_level_fn, op="relu", dtype="fp16", name="tl")
            api.write_candidate(cand, [(os.path.abspath(__file__), "top_level_fn", k)])
            mod = kgate._kernel.load_module(cand)
            (got,) = mod.KGATE_KERNELS
            self.assertEqual(got.name, "tl")
            self.assertEqual(got.fn(7), 7)
            self.assertIsNot(got.fn, top_level_fn)  # the worker's own import, not this object

    def test_a_timeout_keeps_what_was_measured(self):
        # kgate rewrites --json after every job; run_cli's backstop timeout reads it
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "fake-kgate")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nfor a; do last=$a; done\n"
                        "echo '{\"schema\": \"kgate.results/2\", \"incomplete\": \"in progress\", "
                        "\"results\": [{\"kernel\": \"k\", \"verdict\": \"OK\"}]}' > \"$last\"\n"
                        "exec sleep 30\n")
            os.chmod(fake, 0o755)
            with mock.patch.dict(os.environ, {"KGATE_BIN": fake}):
                # 3 s: the fake must have written its JSON by then on a loaded machine
                with self.assertRaisesRegex(kgate.KgateError, "no answer within 3 s") as cm:
                    api.run_cli(["check", "x.py"], os.path.join(d, "r.json"), timeout=3)
            self.assertEqual(cm.exception.code, 5)
            self.assertEqual([r["verdict"] for r in cm.exception.report.results], ["OK"])

    def test_the_interactive_prompt_gets_its_own_message(self):
        ns = {"__name__": "__main__"}
        exec("def my_relu(x):\n    return x\n", ns)  # as typed at the prompt: no file behind __main__
        fake_main = type(sys)("__main__")
        with mock.patch.dict(sys.modules, {"__main__": fake_main}), mock.patch.object(sys, "ps1", ">>> ", create=True):
            with self.assertRaisesRegex(ValueError, "interactive prompt.*from kernels import my_relu"):
                kgate.check(ns["my_relu"], op="relu")
        with mock.patch.dict(sys.modules, {"__main__": fake_main}):  # python3 - < file: no prompt
            with self.assertRaisesRegex(ValueError, "was not defined in a Python file"):
                kgate.check(ns["my_relu"], op="relu")

    def test_progress_gets_each_result_as_kgate_writes_it(self):
        # kgate rewrites --json after every job: progress sees the first result
        # while kgate still runs, and each result once
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "fake-kgate")
            doc = lambda n: ("{\"schema\": \"kgate.results/2\", \"results\": [" +
                             ", ".join("{\"kernel\": \"k%d\", \"verdict\": \"OK\"}" % i for i in range(n)) + "]}")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nfor a; do last=$a; done\n"
                        f"echo '{doc(1)}' > \"$last.t\" && mv \"$last.t\" \"$last\"\n"
                        f"while [ ! -e \"$last.seen\" ]; do sleep 0.1; done\n"
                        f"echo '{doc(2)}' > \"$last.t\" && mv \"$last.t\" \"$last\"\n")
            os.chmod(fake, 0o755)
            out = os.path.join(d, "r.json")
            got = []

            def progress(r):
                got.append(r["kernel"])
                open(out + ".seen", "w").close()  # the fake goes on only once this was called

            with mock.patch.dict(os.environ, {"KGATE_BIN": fake}):
                rep = api.run_cli(["check", "x.py"], out, timeout=60, progress=progress)
            self.assertEqual(got, ["k0", "k1"])
            self.assertEqual([r["kernel"] for r in rep.results], ["k0", "k1"])

    def test_a_failing_progress_ends_kgate(self):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "fake-kgate")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nfor a; do last=$a; done\n"
                        "echo '{\"schema\": \"kgate.results/2\", \"results\": [{\"kernel\": \"k\"}]}' > \"$last\"\n"
                        "exec sleep 30\n")
            os.chmod(fake, 0o755)

            def progress(r):
                raise RuntimeError("stop here")

            t0 = time.monotonic()
            with mock.patch.dict(os.environ, {"KGATE_BIN": fake}):
                with self.assertRaisesRegex(RuntimeError, "stop here"):
                    api.run_cli(["check", "x.py"], os.path.join(d, "r.json"), timeout=60, progress=progress)
            self.assertLess(time.monotonic() - t0, 20)

    def test_results_of_another_schema_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "fake-kgate")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nfor a; do last=$a; done\n"
                        "echo '{\"schema\": \"kgate.results/9\", \"results\": []}' > \"$last\"\n")
            os.chmod(fake, 0o755)
            with mock.patch.dict(os.environ, {"KGATE_BIN": fake}):
                with self.assertRaisesRegex(kgate.KgateError, "kgate.results/9") as cm:
                    api.run_cli(["check", "x.py"], os.path.join(d, "r.json"))
                self.assertEqual(cm.exception.code, 6)


class JudgedTime(unittest.TestCase):
    """Result.time and KernelBench's speedup are the time the gate judged:
    a ModelNew that computes on the host beside a 2 us kernel is not 5x
    faster than eager PyTorch's 10 us because its GPU time is 2 us."""

    def result(self, gpu, judged=None, err=0.0):
        s = {"time/gpu/median": {"value": gpu, "unit": "s"},
             "check/max_scaled_err": {"value": err, "unit": ""}}
        if judged is not None:
            s["time/judged"] = {"value": judged, "unit": "s"}
        return {"kernel": "ModelNew", "verdict": "SLOW" if judged and judged > gpu else "OK", "summaries": s,
                "flags": ["host-work"] if judged and judged > gpu else [],
                "libraries": [{"name": "torch", "status": "ok", "time": 10e-6}]}

    def test_host_work_counts(self):
        from kgate import kernelbench
        r = self.result(2e-6, judged=2e-3)
        self.assertEqual(api.Result(r).time, 2e-3)
        self.assertEqual(api.Result(r).gpu_time, 2e-6)
        kb = kernelbench.kb_gate(r)
        self.assertAlmostEqual(kb["speedup"], 10e-6 / 2e-3)
        self.assertTrue(kb["correct"])
        self.assertFalse(kb["fast_p"])
        self.assertIn("2000.00 us", repr(api.Result(r)))

    def test_without_host_work_and_older_results(self):
        from kgate import kernelbench
        for r in (self.result(2e-6, judged=2e-6), self.result(2e-6)):  # the second: no time/judged
            self.assertEqual(api.Result(r).time, 2e-6)
            kb = kernelbench.kb_gate(r)
            self.assertAlmostEqual(kb["speedup"], 5.0)
            self.assertTrue(kb["fast_p"])
        self.assertIsNone(api.Result({"kernel": "k", "summaries": {}}).time)


@unittest.skipUnless(KGATE, "KGATE_BIN is not set: the CLI part needs the kgate executable")
class CandidatesThroughTheWorkerHost(unittest.TestCase):
    """`kgate check FILE.py` loads the file in the Python worker host; a bad
    one is exit 4 with one line naming it. A good one gets past validation to
    the GPU, which this machine may lack (exit 5)."""

    def run_kgate(self, body, *args):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cand.py")
            with open(path, "w") as f:
                f.write(textwrap.dedent(body))
            env = dict(os.environ, KGATE_PYTHON=sys.executable,
                       PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
            p = subprocess.run([KGATE, "check", path, *args], capture_output=True, text=True, env=env,
                               timeout=120)
            return p.returncode, p.stderr.strip()

    def test_bad_candidates(self):
        cases = [
            ("x = 1\n", "no KGATE_KERNELS list"),
            ("import nosuchmodule_for_kgate\n", "cannot import: ModuleNotFoundError"),
            ("import kgate\nKGATE_KERNELS = [kgate.Kernel(abs, op='nosuchop', dtype='fp16')]\n",
             "unknown operator 'nosuchop'"),
            ("import kgate\nKGATE_KERNELS = [kgate.Kernel(abs, op='layer_norm', dtype='fp16')]\n",
             "does not declare scalar 'eps'"),
            ("import kgate\nKGATE_KERNELS = [kgate.Kernel(abs, op='relu', dtype='fp16', name='a'),\n"
             "                 kgate.Kernel(abs, op='relu', dtype='bf16', name='a')]\n", "'a'"),
            ("KGATE_KERNELS = ['not a kernel']\n", "list of kgate.Kernel"),
            ("import os\nos._exit(0)\n", "did not give a kernel table"),
            ("raise SystemExit(3)\n", "cannot import: SystemExit"),
            # a part of the candidate that did not load names its own file (a KernelBench solution)
            ("from kgate._kernel import CandidateError\n"
             "raise CandidateError('/x/sol.py: refused: importing sol.py replaced torch.relu')\n",
             "cand.py: /x/sol.py: refused: importing sol.py replaced torch.relu"),
        ]
        for body, want in cases:
            with self.subTest(want=want):
                rc, err = self.run_kgate(body)
                self.assertEqual(rc, 4, err)
                self.assertIn(want, err)
                self.assertEqual(len(err.splitlines()), 1, err)

    def test_junk_on_stderr_reaches_python_as_text(self):
        # a candidate that writes bytes of no UTF-8, C1 controls and escapes on
        # stderr and dies while listed: kgate's one line says it as printable
        # UTF-8, and run_cli raises KgateError with it, not UnicodeDecodeError
        import unicodedata
        body = ("import os\nos.write(2, b'junk \\xff\\xfe \\xc2\\x9b[31m \\x1b[0m \\x9b[2J end\\n')\n"
                "os._exit(1)\n")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cand.py")
            with open(path, "w") as f:
                f.write(body)
            env = dict(os.environ, KGATE_PYTHON=sys.executable, PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
            p = subprocess.run([KGATE, "check", path], capture_output=True, env=env, timeout=120)
            err = p.stderr.decode("utf-8")  # strict: every byte kgate printed is UTF-8
            self.assertEqual(p.returncode, 4, err)
            self.assertIn("junk ?? ?[31m ?[0m ?[2J end", err)
            self.assertFalse([c for c in err.rstrip("\n") if unicodedata.category(c) == "Cc"], err)
            with mock.patch.dict(os.environ, {"KGATE_BIN": KGATE, "PYTHONPATH": env["PYTHONPATH"]}):
                with self.assertRaises(kgate.KgateError) as cm:
                    api.run_cli(["check", path], os.path.join(d, "r.json"))
            self.assertEqual(cm.exception.code, 4)
            self.assertIn("junk ?? ?[31m", str(cm.exception))

    def test_a_pinned_candidate(self):
        # --pin-sha256: the worker host imports the candidate only with that hash
        import hashlib
        body = "import kgate\ndef relu(x):\n    return x.clamp_min(0)\n" \
               "KGATE_KERNELS = [kgate.Kernel(relu, op='relu', dtype='fp16')]\n"
        rc, err = self.run_kgate(body, "--pin-sha256", "0" * 64)
        self.assertEqual(rc, 4, err)
        self.assertIn("cand.py: changed since kgate started judging it", err)
        self.assertEqual(len(err.splitlines()), 1)
        rc, err = self.run_kgate(body, "--pin-sha256", hashlib.sha256(body.encode()).hexdigest(),
                                 "--op", "relu", "--shape", "small")
        self.assertIn(rc, (0, 1, 2, 5), err)  # past the list job: judged, or no GPU here
        with mock.patch.dict(os.environ, {"KGATE_CANDIDATE_SHA256": "0" * 64}):
            rc, err = self.run_kgate(body, "--op", "relu", "--shape", "small")
        self.assertIn(rc, (0, 1, 2, 5), err)  # a stray variable in kgate's environment is not a pin

    def test_a_list_job_names_no_kernel(self):
        # KGATE_KERNEL is the kernel a kernel job opens the candidate for; listing opens it
        # for none, whatever kgate's own environment says
        with mock.patch.dict(os.environ, {"KGATE_KERNEL": "leaked"}):
            rc, err = self.run_kgate("import os\nx = os.environ.get('KGATE_KERNEL')\n"
                                     "raise SystemExit(f'KGATE_KERNEL={x}')\n")
        self.assertEqual(rc, 4, err)
        self.assertIn("KGATE_KERNEL=None", err)

    def test_good_candidate_is_validated(self):
        rc, err = self.run_kgate("import kgate\n"
                                 "def relu(x):\n    return x.clamp_min(0)\n"
                                 "KGATE_KERNELS = [kgate.Kernel(relu, op='relu', dtype='fp16')]\n",
                                 "--op", "relu", "--shape", "small")
        # past validation: judged on a GPU, or stopped for the lack of one
        self.assertIn(rc, (0, 1, 2, 5), err)
        if rc == 5:
            self.assertIn("GPU", err)


RECURSES = """
import kgate

def my_relu(x):
    return x

report = kgate.check(my_relu, op="relu", dtype="fp16", shapes=["small"])  # at import: no __main__ guard
"""


class KgateDiesWithItsCaller(unittest.TestCase):
    def test_kgate_is_stopped_when_its_python_caller_dies(self):
        """kgate runs in a session of its own (a terminal's Ctrl-C reaches it
        once, through kgate.api); when the Python process that started it is
        killed outright, kgate is told to stop (SIGTERM), not left running."""
        with tempfile.TemporaryDirectory() as d:
            fake, log = os.path.join(d, "kgate"), os.path.join(d, "log")
            with open(fake, "w") as f:
                f.write(f"#!/bin/sh\ntrap 'echo term >>{log}; exit 7' TERM\necho started >>{log}\n"
                        "i=0\nwhile [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done\n")
            os.chmod(fake, 0o755)
            env = dict(os.environ, KGATE_BIN=fake, PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
            caller = subprocess.Popen([sys.executable, "-c", "from kgate import api; api.run_cli(['check', 'x.so'], "
                                       f"{os.path.join(d, 'r.json')!r})"], env=env)
            for _ in range(100):
                if os.path.exists(log):
                    break
                time.sleep(0.05)
            caller.kill()
            caller.wait()
            for _ in range(100):
                if "term" in open(log).read():
                    break
                time.sleep(0.05)
            self.assertEqual(open(log).read().split(), ["started", "term"])


class ChecksInsideAWorker(unittest.TestCase):
    """A check started inside a kgate worker (a file that calls kgate.check
    at import, as the worker imports it) is refused at once, in one line
    that says to put the call under `if __name__ == "__main__":`: it would
    otherwise start a check in every worker, each importing the file again."""

    ENTRIES = (("kgate.check", lambda d: kgate.check(top_level_fn, op="relu")),
               ("kgate.check", lambda d: kgate.check(top_level_fn, reference=top_level_fn, inputs=top_level_fn)),
               ("kgate.run_cli", lambda d: api.run_cli(["check", "x.py"], os.path.join(d, "r.json"))),
               ("kgate.batch", lambda d: kgate.batch([{"candidate": "c.so"}], os.path.join(d, "r.jsonl"))),
               ("kgate.kernelbench.judge", lambda d: kb().judge(__file__, __file__)),
               ("kgate.kernelbench.judge_group", lambda d: kb().judge_group(__file__, [__file__])),
               ("kgate.kernelbench.batch", lambda d: kb().batch(d, d)),
               ("kgate.kernelbench.batch_gpus", lambda d: kb().batch_gpus(d, d, os.path.join(d, "w"))))

    def refused_everywhere(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.object(tempfile, "tempdir", d), \
                mock.patch.dict(os.environ, {"KGATE_BIN": "/nonexistent/kgate"}):
            for entry, call in self.ENTRIES:
                with self.subTest(entry=entry), self.assertRaises(kgate.KgateError) as cm:
                    call(d)
                self.assertEqual(cm.exception.code, 3)
                self.assertEqual(str(cm.exception), f"{entry}: called inside a kgate worker, which imports the "
                                                    'file that calls it: put the call under '
                                                    '`if __name__ == "__main__":`')
            self.assertEqual(os.listdir(d), [])  # refused before any scratch folder
            with mock.patch("sys.stderr", new_callable=io.StringIO) as err:
                self.assertEqual(kb().main([d, d]), 3)
            self.assertIn("kgate.kernelbench.batch: called inside a kgate worker", err.getvalue())

    def test_by_the_flag(self):
        with mock.patch.object(api, "_in_worker", True), mock.patch.dict(os.environ):
            os.environ.pop(api.WORKER_ENV, None)
            self.refused_everywhere()

    def test_by_the_environment(self):  # a process the worker started
        with mock.patch.dict(os.environ, {api.WORKER_ENV: "1"}):
            self.refused_everywhere()

    @unittest.skipUnless(KGATE, "KGATE_BIN is not set")
    def test_a_script_that_checks_at_import(self):
        """The worker that lists the candidate kgate.check wrote imports the
        script, whose kgate.check is refused: the script's own check fails
        in seconds with that line (exit 4: the file does not import), from an
        exec'd worker and from the fork server's, and leaves no folder."""
        for zygote in ("0", "1"):
            with self.subTest(zygote=zygote), tempfile.TemporaryDirectory() as d:
                script, tmp = os.path.join(d, "my_relu.py"), os.path.join(d, "tmp")
                os.mkdir(tmp)
                with open(script, "w") as f:
                    f.write(RECURSES)
                env = dict(os.environ, KGATE_BIN=KGATE, KGATE_PYTHON=sys.executable, TMPDIR=tmp,
                           KGATE_ZYGOTE=zygote, PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
                p = subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=d, start_new_session=True)
                try:
                    _, err = p.communicate(timeout=60)
                except subprocess.TimeoutExpired:  # the recursion: each level a check of its own
                    os.killpg(p.pid, 9)
                    p.communicate()
                    self.fail("kgate.check at import was not refused within 60 s")
                last = err.strip().splitlines()[-1]
                self.assertNotEqual(p.returncode, 0, err)
                self.assertTrue(last.startswith("kgate.api.KgateError: kgate: "), err)
                self.assertIn("cannot import: KgateError: kgate.check: called inside a kgate worker", last)
                self.assertIn('put the call under `if __name__ == "__main__":`', last)
                self.assertEqual(os.listdir(tmp), [])

    @unittest.skipUnless(KGATE, "KGATE_BIN is not set")
    def test_a_candidates_subprocess(self):
        # the variable reaches what the candidate starts: a check there is refused too
        child = "import kgate\ntry:\n    kgate.batch('m.jsonl', 'r.jsonl')\nexcept kgate.KgateError as e:\n    print(e)\n"
        body = ("import subprocess, sys\n"
                f"p = subprocess.run([sys.executable, '-c', {child!r}], capture_output=True, text=True)\n"
                "raise SystemExit(p.stdout.strip() or p.stderr.strip())\n")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cand.py")
            with open(path, "w") as f:
                f.write(body)
            env = dict(os.environ, KGATE_PYTHON=sys.executable, PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
            p = subprocess.run([KGATE, "check", path], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 4, p.stderr)
        self.assertIn("cannot import: SystemExit: kgate.batch: called inside a kgate worker", p.stderr)


def kb():
    from kgate import kernelbench
    return kernelbench


FAKE_KB = os.path.join(HERE, "fake_kb_check.py")


def wait_for(what, timeout=60):
    """what()'s first true value, polled until timeout s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"not seen within {timeout} s")


def lines_of(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


class KernelbenchAsItGoes(unittest.TestCase):
    """`kgate kernelbench DIR DIR` (python3 -m kgate; tests/python/
    fake_kb_check.py as each problem's kgate check, through KGATE_BIN): a
    line on stderr as each problem starts and ends, with its verdicts; with
    --json the results so far after each problem, valid and marked
    incomplete while the rest runs; SIGTERM or SIGINT stops the running
    check (given the signal once), writes what was judged with `incomplete`
    naming the signal, and exits 7."""

    SERVED = ("kgate kernelbench: each check through a private kgate serve (its fork server kept warm; "
              "--no-serve: a kgate check of its own each)")

    def start(self, d, sleep, env=None, extra=()):
        probs, sols = kb_dirs(d, ("1_A.py", "2_B.py", "3_C.py"), ("1_a.py", "1_b_slow.py", "2_a.py", "3_a.py"))
        self.err, self.log, self.json, self.slog = (os.path.join(d, x) for x in ("err", "log", "r.json", "slog"))
        e = dict(os.environ, KGATE_BIN=FAKE_KB, KG_FAKE_SLEEP=str(sleep), KG_FAKE_LOG=self.log,
                 KG_FAKE_SERVE_LOG=self.slog, PYTHONPATH=os.path.join(HERE, "..", "..", "python"), **(env or {}))
        with open(self.err, "w") as err:
            return subprocess.Popen([sys.executable, "-m", "kgate", "kernelbench", probs, sols, "--json", self.json,
                                     *extra], stdout=subprocess.PIPE, stderr=err, text=True, env=e, cwd=d)

    def doc(self):
        with open(self.json) as f:
            return json.load(f)

    def test_progress_and_the_results_so_far(self):
        with tempfile.TemporaryDirectory() as d:
            p = self.start(d, 1.5)
            try:
                first = "kgate kernelbench: [1/3] 1_A.py (2 solutions): OK 1, SLOW 1 in "
                wait_for(lambda: any(l.startswith(first) for l in lines_of(self.err)))
                self.assertIsNone(p.poll())  # the next problems still run
                doc = self.doc()
                self.assertEqual(doc["incomplete"], "in progress: 1 of 3 problems done (the finished command "
                                                    "rewrites this file)")
                self.assertEqual([r["verdict"] for r in doc["results"]], ["OK", "SLOW"])
                self.assertTrue(all("kernelbench" in r for r in doc["results"]))
                out, _ = p.communicate(timeout=60)
            finally:
                if p.poll() is None:
                    p.kill()
            self.assertEqual(p.returncode, 1)  # SLOW the worst
            self.assertEqual([l.split(" in ")[0] for l in lines_of(self.err)],
                             [self.SERVED,
                              "kgate kernelbench: [1/3] 1_A.py (2 solutions): started",
                              "kgate kernelbench: [1/3] 1_A.py (2 solutions): OK 1, SLOW 1",
                              "kgate kernelbench: [2/3] 2_B.py (2_a.py): started",
                              "kgate kernelbench: [2/3] 2_B.py (2_a.py): OK 1",
                              "kgate kernelbench: [3/3] 3_C.py (3_a.py): started",
                              "kgate kernelbench: [3/3] 3_C.py (3_a.py): OK 1"])
            doc = self.doc()
            self.assertNotIn("incomplete", doc)
            self.assertEqual(len(doc["results"]), 4)
            self.assertIn("3_a", out)

    def run_to_end(self, env=None, extra=()):
        """(exit code, stderr lines, serve log lines) of a whole run."""
        with tempfile.TemporaryDirectory() as d:
            p = self.start(d, 0, env, extra)
            try:
                p.communicate(timeout=60)
            finally:
                if p.poll() is None:
                    p.kill()
            return p.returncode, lines_of(self.err), lines_of(self.slog)

    def test_checks_through_a_private_service(self):
        """A directory run starts one kgate serve of its own (a socket in a
        folder of its own), gives each check --server that socket, and
        stops the service and removes its folder at the end."""
        code, err, slog = self.run_to_end()
        self.assertEqual(code, 1, err)
        self.assertEqual(err[0], self.SERVED)
        first = slog[0].split()
        self.assertEqual(first[0], "serve")
        sock = first[first.index("--socket") + 1]
        self.assertEqual(first[first.index("--job-timeout") + 1], "1e+06")  # no --timeout: no limit of its own
        self.assertEqual(slog[1:4], [f"check --server {sock}"] * 3)
        self.assertEqual(slog[4:], [f"serve-stop {first[1]} SIGTERM"])
        self.assertFalse(os.path.exists(os.path.dirname(sock)))

    def test_private_service_on_the_gpu_of_device(self):
        """--device N: the private service runs on GPU N, and the checks it
        judges are not given --device (the service's GPU is its own)."""
        with tempfile.TemporaryDirectory() as d:
            args = os.path.join(d, "args.json")
            code, err, slog = self.run_to_end(env={"KG_FAKE_ARGS": args}, extra=["--device", "2"])
            self.assertEqual(code, 1, err)
            first = slog[0].split()
            self.assertEqual(first[first.index("--gpu") + 1], "2")
            with open(args) as f:
                got = json.load(f)
            self.assertNotIn("--device", got)
            self.assertEqual(got[got.index("--server") + 1], first[first.index("--socket") + 1])

    def test_no_private_service(self):
        """--no-serve: each check a kgate of its own; a service that does not
        start is said, and each check runs without it."""
        code, err, slog = self.run_to_end(extra=["--no-serve"])
        self.assertEqual((code, slog), (1, []))
        self.assertTrue(err[0].endswith(": started"), err)
        code, err, slog = self.run_to_end(env={"KG_FAKE_NO_SERVE": "1"})
        self.assertEqual((code, slog), (1, []))
        self.assertEqual(err[0], "kgate kernelbench: no private kgate serve (kgate: serve: no GPU here (fake)): "
                                 "each check starts its own fork server")
        self.assertEqual(len([l for l in err if l.endswith(": started")]), 3)

    def test_server_reaches_the_check(self):
        """--server SOCK is handed to the check (kgate check --server), which
        asks the service or, with none there, checks locally."""
        with tempfile.TemporaryDirectory() as d:
            probs, sols = kb_dirs(d, ("1_A.py",), ("1_a.py",))
            args = os.path.join(d, "args.json")
            e = dict(os.environ, KGATE_BIN=FAKE_KB, KG_FAKE_ARGS=args,
                     PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
            for extra, want in ((["--server", "auto"], ["--server", "auto"]), ([], [])):
                p = subprocess.run([sys.executable, "-m", "kgate", "kernelbench", probs, sols, *extra],
                                   capture_output=True, text=True, env=e, cwd=d, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(args) as f:
                    got = json.load(f)
                self.assertEqual([a for a in got if a in ("--server", "auto")], want)
            p = subprocess.run([sys.executable, "-m", "kgate", "kernelbench", probs, sols, "--server", "auto",
                                "--gpus", "0"], capture_output=True, text=True, env=e, cwd=d, timeout=60)
            self.assertEqual(p.returncode, 3)
            self.assertIn("--server and --gpus", p.stderr)

    def stopped(self, sig, after_starts, want_judged, want_done):
        with tempfile.TemporaryDirectory() as d:
            p = self.start(d, 3)
            try:
                wait_for(lambda: len([l for l in lines_of(self.log) if l.startswith("start ")]) == after_starts)
                p.send_signal(sig)
                p.communicate(timeout=30)
            finally:
                if p.poll() is None:
                    p.kill()
            name = signal.Signals(sig).name
            self.assertEqual(p.returncode, 7, lines_of(self.err))
            doc = self.doc()
            self.assertEqual(doc["incomplete"], f"stopped by {name} after {want_done} of 3 problems; "
                                                "the rest did not run")
            self.assertEqual([r["verdict"] for r in doc["results"]], want_judged)  # the stopped job's not taken
            log = lines_of(self.log)
            pid = log[-1].split()[1]
            self.assertEqual(log[-1], f"stop {pid} {name}")  # the running check, told once
            self.assertEqual(len([l for l in log if l.startswith("start ")]), after_starts)  # none started after
            self.assertEqual(lines_of(self.err)[-1], f"kgate: kernelbench: {doc['incomplete']}; what was judged is "
                                                     f"in {self.json}")

    def test_sigterm_in_the_second_problem(self):
        self.stopped(signal.SIGTERM, 2, ["OK", "SLOW"], 1)

    def test_sigint_in_the_first_problem(self):
        self.stopped(signal.SIGINT, 1, [], 0)

    @unittest.skipUnless(KGATE, "KGATE_BIN is not set")
    def test_sigterm_with_gpus(self):
        """--gpus: the signal reaches kgate batch, which stops its running job
        (tests/fake_check.sh, given SIGTERM by it); the jobs recorded are
        written, marked incomplete, exit 7; the same command resumes."""
        with tempfile.TemporaryDirectory() as d:
            probs, sols = kb_dirs(d, ("1_A.py", "2_B.py", "3_C.py"), ("1_a.py", "2_a.py", "3_a.py"))
            j, stops = os.path.join(d, "r.json"), os.path.join(d, "stops")
            env = dict(os.environ, KGATE_BIN=KGATE, KG_BATCH_RUNNER=os.path.join(HERE, "..", "fake_check.sh"),
                       KG_BATCH_GPUS="1", KG_FAKE_SLEEP="2", KG_FAKE_STOPLOG=stops, KG_FAKE_LOG=os.path.join(d, "log"),
                       KGATE_LOCK_DIR=os.path.join(d, "locks"), PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
            cmd = [sys.executable, "-m", "kgate", "kernelbench", probs, sols, "--gpus", "all", "--json", j]
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=d)
            try:
                wait_for(lambda: len(lines_of(stops + ".armed")) == 2)  # the second job runs
                p.send_signal(signal.SIGTERM)
                _, err = p.communicate(timeout=90)
            finally:
                if p.poll() is None:
                    p.kill()
            self.assertEqual(p.returncode, 7, err)
            with open(j) as f:
                doc = json.load(f)
            self.assertEqual(len(doc["results"]), 1)
            self.assertNotIn("errors", doc)  # the jobs not run are the rerun's, not errors
            self.assertEqual(doc["incomplete"], f"stopped by SIGTERM with 1 of 3 jobs recorded in {j}.d/results.jsonl;"
                                                " the same command resumes")
            self.assertEqual(len(lines_of(stops)), 1)  # the running job was asked to stop
            env.pop("KG_FAKE_STOPLOG")
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=d, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(j) as f:
                self.assertEqual(len(json.load(f)["results"]), 3)
            self.assertEqual(len(lines_of(os.path.join(d, "log"))), 3)  # each judged once


class StoppingKgate(unittest.TestCase):
    """The kgate that run_cli waits for runs in a session of its own: a stop
    (api.request_stop: kgate kernelbench's SIGINT and SIGTERM) or a Ctrl-C
    (KeyboardInterrupt) gives it that signal once, and one that has not
    ended after its grace is killed (tests/python/fake_kb_check.py as
    kgate)."""

    def run_fake(self, d, env, when_started, grace=10.0):
        cand, log = os.path.join(d, "kb.py"), os.path.join(d, "log")
        with open(cand, "w") as f:
            f.write("candidate_group('p.py', ['s.py'], names=['ModelNew'])\n")

        def later():
            wait_for(lambda: lines_of(log))
            when_started()
        threading.Thread(target=later, daemon=True).start()
        env = dict(env, KGATE_BIN=FAKE_KB, KG_FAKE_SLEEP="30", KG_FAKE_LOG=log)
        try:
            with mock.patch.dict(os.environ, env), mock.patch.object(api, "CHECK_GRACE_S", grace):
                api.run_cli(["check", cand], os.path.join(d, "r.json"))
        finally:
            api.request_stop(0)
        return lines_of(log)

    def log_of(self, d):
        return lines_of(os.path.join(d, "log"))

    def test_a_stop_reaches_kgate_once(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(kgate.KgateError) as cm:
                self.run_fake(d, {}, lambda: api.request_stop(signal.SIGTERM))
            log = self.log_of(d)
        self.assertEqual(cm.exception.code, 7)
        self.assertEqual(str(cm.exception), "kgate: stopped by Terminated: the job running then was abandoned")
        self.assertEqual([r["verdict"] for r in cm.exception.report.results], ["SKIPPED"])
        self.assertEqual([l.split()[0] for l in log], ["start", "stop"])
        with self.assertRaisesRegex(kgate.KgateError, "stopped by SIGTERM: kgate check not started"):
            api.request_stop(signal.SIGTERM)
            try:
                api.run_cli(["check", "x.py"], "r.json")
            finally:
                api.request_stop(0)

    def test_a_kgate_that_does_not_stop_is_killed(self):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.monotonic()
            with self.assertRaises(kgate.KgateError) as cm:
                self.run_fake(d, {"KG_FAKE_DEAF": "1"}, lambda: api.request_stop(signal.SIGTERM), grace=1.0)
            pid = int(self.log_of(d)[0].split()[1])
        self.assertLess(time.monotonic() - t0, 15)
        self.assertEqual(cm.exception.code, 7)
        self.assertEqual(str(cm.exception), "kgate: ended by SIGKILL (stopped by SIGTERM; it did not end within 1 s)")
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)

    def test_ctrl_c_in_kgate_check_stops_its_kgate(self):
        # kgate.check's wait: the terminal's ^C does not reach kgate (its own session); the
        # KeyboardInterrupt gives it SIGINT, and is raised once it has ended
        import _thread
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(KeyboardInterrupt):
                self.run_fake(d, {}, _thread.interrupt_main)
            self.assertEqual(self.log_of(d)[-1].split()[2], "SIGINT")
            with open(os.path.join(d, "r.json")) as f:
                self.assertEqual([r["verdict"] for r in json.load(f)["results"]], ["SKIPPED"])


PROBE = """
import json, os, sys
def open_fds():
    out = {}
    for x in os.listdir("/proc/self/fd"):
        try:
            out[int(x)] = os.readlink("/proc/self/fd/" + x)
        except OSError:
            pass  # listdir's own descriptor, closed by now
    return out
fds = open_fds()
seen = {"ppid": os.getppid(), "pid": os.getpid(), "pgid": os.getpgid(0),
        "cmd": open("/proc/self/cmdline").read().split("\\0")[:3],
        "sockets": [fd for fd, what in fds.items() if what.startswith("socket:")],
        "inherited": [fd for fd in fds if fd > 3],
        "env": os.environ.get("KG_PROBE_ENV"), "cwd": os.getcwd()}
with open(os.environ["KG_PROBE_OUT"], "a") as f:
    f.write(json.dumps(seen) + "\\n")
if os.environ.get("KG_PROBE_HANG"):
    import time
    time.sleep(600)
raise SystemExit(3)
"""


@unittest.skipUnless(KGATE, "KGATE_BIN is not set: the CLI part needs the kgate executable")
class ForkServer(unittest.TestCase):
    """Python workers come from the fork server (src/supervise/zygote.h): each is
    kgate's own child in its own process group, with descriptors 0 to 3 only,
    kgate's environment and directory at the time of the job; KGATE_ZYGOTE=0,
    or a server that cannot start, gives exec'd workers; a hung worker is
    killed by the watchdog with nothing left behind."""

    def probe(self, extra_env=None, python=sys.executable, args=(), pass_fds=()):
        with tempfile.TemporaryDirectory() as d:
            cand, out = os.path.join(d, "probe.py"), os.path.join(d, "probe.jsonl")
            with open(cand, "w") as f:
                f.write(PROBE)
            env = dict(os.environ, KGATE_PYTHON=python, PYTHONPATH=os.path.join(HERE, "..", "..", "python"),
                       KG_PROBE_OUT=out, KG_PROBE_ENV="job-env", **(extra_env or {}))
            p = subprocess.Popen([KGATE, "check", cand, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=env, cwd=d, pass_fds=pass_fds)
            _, err = p.communicate(timeout=120)
            with open(out) as f:
                seen = [json.loads(line) for line in f]
            self.marker = out  # this probe's own: other runs' servers are not ours to count
            return p.pid, p.returncode, err.strip(), seen, d

    def left_behind(self, pid):
        """Processes whose parent is pid, or a fork server of this probe."""
        mine = []
        for e in os.listdir("/proc"):
            if e.isdigit():
                try:
                    with open(f"/proc/{e}/stat") as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                    with open(f"/proc/{e}/cmdline") as f:
                        cmd = f.read()
                    with open(f"/proc/{e}/environ") as f:
                        env = f.read()
                except (OSError, IndexError, ValueError):
                    continue
                if ppid == pid or ("kgate._zygote" in cmd and "KG_PROBE_OUT=" + self.marker in env):
                    mine.append(int(e))
        return mine

    def test_worker_is_forked_by_the_server(self):
        pid, rc, err, seen, d = self.probe()
        self.assertEqual(rc, 4, err)
        self.assertIn("cannot import: SystemExit", err)
        self.assertEqual(len(seen), 1)
        w = seen[0]
        self.assertEqual(w["cmd"][1:3], ["-m", "kgate._zygote"])  # forked, not exec'd
        self.assertEqual(w["ppid"], pid)   # kgate's child: its watchdog waits for it
        self.assertEqual(w["pgid"], w["pid"])  # its own group: the watchdog kills the group
        self.assertEqual(w["sockets"], [])  # not the server's socket
        self.assertEqual(w["inherited"], [])  # nothing beyond 0..3
        self.assertEqual(w["env"], "job-env")
        self.assertEqual(os.path.realpath(w["cwd"]), os.path.realpath(d))
        self.assertEqual(self.left_behind(pid), [])

    def test_off_gives_exec(self):
        r, w = os.pipe()  # a descriptor kgate inherits (as from a CI runner): no worker gets it
        os.set_inheritable(w, True)
        try:
            _, rc, err, seen, _ = self.probe({"KGATE_ZYGOTE": "0"}, pass_fds=(w,))
        finally:
            os.close(r)
            os.close(w)
        self.assertEqual(rc, 4, err)
        self.assertEqual(seen[0]["cmd"][1:3], ["-m", "kgate._worker"])
        self.assertEqual(seen[0]["inherited"], [])

    def test_a_server_that_cannot_start_falls_back_to_exec(self):
        with tempfile.TemporaryDirectory() as d:
            py = os.path.join(d, "python")
            with open(py, "w") as f:  # an interpreter whose fork server dies at once
                f.write(f'#!/bin/sh\n[ "$2" = kgate._zygote ] && exit 1\nexec {sys.executable} "$@"\n')
            os.chmod(py, 0o755)
            _, rc, err, seen, _ = self.probe(python=py)
        self.assertEqual(rc, 4, err)
        self.assertIn("cannot import: SystemExit", err)
        self.assertEqual(seen[0]["cmd"][1:3], ["-m", "kgate._worker"])

    def test_batch_hands_the_next_jobs_server_over(self):
        """kgate batch starts the next Python job's fork server while a job
        runs, in the process that later execs that job's check: the check
        takes it over (it starts none of its own) and its worker comes from
        it, as the check's child; nothing is left behind."""
        with tempfile.TemporaryDirectory() as d:
            out, starts, py = (os.path.join(d, x) for x in ("probe.jsonl", "starts", "python"))
            with open(py, "w") as f:  # logs each fork server's parent
                f.write(f'#!/bin/sh\n[ "$2" = kgate._zygote ] && echo "$PPID" >>{starts}\n'
                        f'exec {sys.executable} "$@"\n')
            os.chmod(py, 0o755)
            with open(os.path.join(d, "m.jsonl"), "w") as f:
                for i in range(3):
                    with open(os.path.join(d, f"probe{i}.py"), "w") as g:
                        g.write(PROBE)
                    f.write(json.dumps({"candidate": f"probe{i}.py"}) + "\n")
            env = dict(os.environ, KGATE_PYTHON=py, PYTHONPATH=os.path.join(HERE, "..", "..", "python"),
                       KG_PROBE_OUT=out, KG_BATCH_GPUS="1", KGATE_LOCK_DIR=os.path.join(d, "locks"))
            env.pop("KG_BATCH_RUNNER", None)
            self.marker = out
            p = subprocess.run([KGATE, "batch", "m.jsonl", "-o", "r.jsonl"], capture_output=True, text=True,
                               env=env, cwd=d, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(os.path.join(d, "r.jsonl")) as f:
                lines = [json.loads(x) for x in f]
            self.assertEqual([x["exit"] for x in lines], [4, 4, 4])  # each check reached its candidate
            with open(starts) as f:
                started = [int(x) for x in f.read().split()]
            with open(out) as f:
                workers = [json.loads(x) for x in f]
            self.assertEqual(len(workers), 3)
            for w in workers:
                self.assertEqual(w["cmd"][1:3], ["-m", "kgate._zygote"])  # forked by a server
            parents = [w["ppid"] for w in workers]
            self.assertEqual(len(set(parents)), 3)
            # four servers: the first check's own, and one in each slot (the
            # second and third jobs', and one the batch's end dropped); each
            # check's worker came from the one server whose parent it was (a
            # check that took none over would have started a second)
            self.assertEqual(len(started), 4, started)
            self.assertEqual(len(set(started)), 4, started)
            for p in parents:
                self.assertEqual(started.count(p), 1, (parents, started))
            self.assertEqual(self.left_behind(-1), [])

    def test_a_hung_worker_is_killed(self):
        pid, rc, err, seen, _ = self.probe({"KG_PROBE_HANG": "1"}, args=("--timeout", "3"))
        self.assertEqual(rc, 4, err)
        self.assertIn("no answer within the time limit", err)
        self.assertEqual(seen[0]["cmd"][1:3], ["-m", "kgate._zygote"])
        with self.assertRaises(ProcessLookupError):
            os.kill(seen[0]["pid"], 0)
        self.assertEqual(self.left_behind(pid), [])


@unittest.skipUnless(KGATE, "KGATE_BIN is not set: the service is the kgate executable")
class ServeClient(unittest.TestCase):
    """kgate.serve() and kgate.Client: requests to `kgate serve` with
    tests/fake_check.sh as each request's check."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.env = mock.patch.dict(os.environ, {"KGATE_BIN": KGATE,
                                                "KG_BATCH_RUNNER": os.path.join(HERE, "..", "fake_check.sh")})
        self.env.start()
        for name in ("a.so", "c_slow.so", "c_wrong.so", "c_multi.so", "c_multi_sleepy.so", "c_noted.so"):
            open(os.path.join(self.tmp.name, name), "w").close()

    def tearDown(self):
        self.env.stop()
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_stdio_service_answers_each_request(self):
        with kgate.serve(options=["--trials", "2"]) as s:
            ok = s.check(self.path("a.so"), op="relu", shape=(64, 64))
            slow = s.check(self.path("c_slow.so"))
            wrong = s.check(self.path("c_wrong.so"), options=["--no-edge"])
        self.assertEqual((ok.verdict, ok.code), ("OK", 0))
        self.assertIn("--op relu --shape 64x64 --trials 2 --lib-cache", ok.doc["command"])
        self.assertEqual((slow.verdict, slow.code), ("SLOW", 1))
        self.assertEqual((wrong.verdict, wrong.code), ("INCORRECT", 2))
        self.assertIn("--no-edge", wrong.doc["command"])

    def test_notes_are_the_reports_stderr(self):
        """What the service's check said without failing reaches Report.stderr,
        as a local check's stderr would hold it."""
        with kgate.serve() as s:
            rep = s.check(self.path("c_noted.so"))
            plain = s.check(self.path("a.so"))
        self.assertEqual(rep.code, 0)
        self.assertEqual(rep.stderr.splitlines(),
                         ["kgate: --lib-cache: relu fp16: the library times not kept: a wide interval",
                          "kgate: a second note ?[31m in colour"])
        self.assertEqual(plain.stderr, "")

    def test_on_kernel_gets_each_result_as_it_is_judged(self):
        """The fake check judges k1, then waits for a gate file (at most 30 s)
        before k2 and k3: a callback that makes the gate at k1 sees k1 while
        the check still runs, and the check ends at once."""
        gate, got = self.path("gate"), []

        def on_kernel(r):
            got.append((r, os.path.exists(gate)))
            open(gate, "w").close()

        with mock.patch.dict(os.environ, {"KG_FAKE_GATE": gate}):
            with kgate.serve() as s:
                t0 = time.time()
                rep = s.check(self.path("c_multi.so"), on_kernel=on_kernel)
                took = time.time() - t0
                plain = s.check(self.path("a.so"))  # no callback: the progress lines are read past
        self.assertLess(took, 20)  # streamed: k1 came while the check waited at the gate
        self.assertEqual([(r.kernel, seen) for r, seen in got], [("k1", False), ("k2", True), ("k3", True)])
        self.assertTrue(all(isinstance(r, kgate.Result) for r, _ in got))
        self.assertEqual([dict(r) for r, _ in got], [dict(r) for r in rep.results])
        self.assertEqual((rep.code, plain.code, plain.verdict), (0, 0, "OK"))
        with self.assertRaises(ValueError):
            with kgate.serve() as s:
                s.check(self.path("a.so"), on_kernel="not callable")

    def test_on_kernel_raising_cancels_the_request(self):
        def enough(r):
            raise RuntimeError("enough")

        with kgate.serve() as s:
            t0 = time.time()
            with self.assertRaisesRegex(RuntimeError, "enough"):
                s.check(self.path("c_multi_sleepy.so"), on_kernel=enough)
            self.assertLess(time.time() - t0, 15)  # cancelled: the check slept 30 s after k1
            after = s.check(self.path("a.so"))  # the service goes on
        self.assertEqual((after.code, after.verdict), (0, "OK"))

    def test_read_batch_skips_progress_lines(self):
        out = self.path("answers.jsonl")
        with open(out, "w") as f:
            f.write('{"schema":"kgate.batch/1","id":"a","event":"kernel","result":{"kernel":"k"}}\n'
                    '{"schema":"kgate.batch/1","id":"a","exit":0}\n')
        self.assertEqual(list(kgate.read_batch(out)), [{"schema": "kgate.batch/1", "id": "a", "exit": 0}])

    def test_socket_client(self):
        sock = self.path("s.sock")
        p = subprocess.Popen([KGATE, "serve", "--socket", sock, "--idle-timeout", "30"], stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                if os.path.exists(sock):
                    break
                time.sleep(0.05)
            with kgate.Client(socket=sock) as c:
                r = c.check(self.path("a.so"), id="mine")
                self.assertEqual((r.verdict, r.code), ("OK", 0))
                bad = c.check(self.path("a.so"), options=["--trials", "0"] * 20)
                self.assertEqual(bad.code, 3)  # over the manifest's 16 options: refused, the service goes on
                self.assertIn("options", bad.stderr)
                self.assertEqual(c.check(self.path("c_slow.so")).verdict, "SLOW")
        finally:
            p.terminate()
            p.wait(timeout=30)

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            kgate.serve(gpu=-1)
        with self.assertRaises(ValueError):
            kgate.Client(socket="")
        with self.assertRaises(kgate.KgateError) as e:
            kgate.Client(socket=self.path("nobody.sock"))
        self.assertEqual(e.exception.code, 5)


if __name__ == "__main__":
    unittest.main(verbosity=2)
