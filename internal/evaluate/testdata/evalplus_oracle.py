# EvalPlus's own verdict on candidate solutions, for the differential test
# (evalplus_diff_test.go). Everything below the marked lines is copied from
# github.com/evalplus/evalplus at commit 26d6d00 (Apache-2.0; parts of
# evalplus/eval/__init__.py are MIT, (c) OpenAI), unchanged except where a
# comment says "CHANGED":
#   evalplus/gen/util/__init__.py      trusted_exec
#   evalplus/data/mbpp.py              mbpp_deserialize_inputs
#   evalplus/eval/_special_oracle.py   special oracles
#   evalplus/eval/__init__.py          is_floats, unsafe_execute, untrusted_check
#   evalplus/eval/utils.py             time_limit, swallow_io, reliability_guard
#   evalplus/evaluate.py               get_groundtruth (one task), check_correctness
# The process plumbing (multiprocessing shared Values) becomes a fork and a
# pipe, and numpy, absent from the sandbox, is replaced by a transcription
# of numpy 1.26's isclose/allclose when it cannot be imported.
#
# stdin: {"task": {EvalPlus record fields}, "dataset": "humaneval"|"mbpp",
#         "candidates": [solution source, ...], "timeout_per_task": seconds}
# stdout: {"ground_truth_ok": bool, "verdicts": [{"base": stat, "plus": stat}, ...]}

import contextlib
import io
import json
import math
import os
import select
import signal
import sys
import time
from copy import deepcopy

if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)

try:
    import numpy as np
except ImportError:
    class np:  # CHANGED: numpy 1.26 numeric.isclose/allclose, for nested lists
        @staticmethod
        def _asarray(v):
            # numpy.asanyarray: a rectangular nest of numbers -> (shape, rows)
            if isinstance(v, (list, tuple)):
                items = [np._asarray(x) for x in v]
                shapes = {s for s, _ in items}
                if len(shapes) > 1:
                    raise ValueError("inhomogeneous shape")
                inner = shapes.pop() if shapes else ()
                return (len(items),) + inner, [x for _, x in items]
            if isinstance(v, bool) or isinstance(v, int):
                if not -2 ** 63 <= v < 2 ** 64:
                    raise TypeError("object array")
                return (), float(v)
            if isinstance(v, (float, complex)):
                return (), v
            raise TypeError("ufunc 'isfinite' not supported for the input types")

        @staticmethod
        def _isfinite(z):
            if isinstance(z, complex):
                return math.isfinite(z.real) and math.isfinite(z.imag)
            return math.isfinite(z)

        @staticmethod
        def _broadcast(x, sx, y, sy):
            # yields element pairs of x and y broadcast together
            if len(sx) < len(sy):
                return np._broadcast([x], (1,) + sx, y, sy)
            if len(sy) < len(sx):
                return np._broadcast(x, sx, [y], (1,) + sy)
            if not sx:
                return [(x, y)]
            n, m = sx[0], sy[0]
            if n != m and n != 1 and m != 1:
                raise ValueError("operands could not be broadcast together")
            out = []
            for i in range(max(n, m)):
                out += np._broadcast(x[0 if n == 1 else i], sx[1:], y[0 if m == 1 else i], sy[1:])
            return out

        @staticmethod
        def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
            sx, x = np._asarray(a)
            sy, y = np._asarray(b)
            for xi, yi in np._broadcast(x, sx, y, sy):
                if np._isfinite(xi) and np._isfinite(yi):
                    ok = abs(xi - yi) <= atol + rtol * abs(yi)
                else:
                    ok = xi == yi
                if not ok:
                    return False
            return True

        class ndarray:
            pass


# ---------------------------------------------------------------- copied
# evalplus/eval/utils.py
class TimeoutException(Exception):
    pass


class WriteOnlyStringIO(io.StringIO):
    """StringIO that throws an exception when it's read from"""

    def read(self, *args, **kwargs):
        raise IOError

    def readline(self, *args, **kwargs):
        raise IOError

    def readlines(self, *args, **kwargs):
        raise IOError

    def readable(self, *args, **kwargs):
        """Returns True if the IO object can be read."""
        return False


class redirect_stdin(contextlib._RedirectStream):  # type: ignore
    _stream = "stdin"


@contextlib.contextmanager
def swallow_io():
    stream = WriteOnlyStringIO()
    with contextlib.redirect_stdout(stream):
        with contextlib.redirect_stderr(stream):
            with redirect_stdin(stream):
                yield


@contextlib.contextmanager
def time_limit(seconds: float):
    def signal_handler(signum, frame):
        raise TimeoutException("Timed out!")

    signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.signal(signal.SIGALRM, signal_handler)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def reliability_guard(maximum_memory_bytes=None):
    # CHANGED: no memory limit (the sandbox has one), no faulthandler.
    import builtins

    builtins.exit = None
    builtins.quit = None

    import os

    os.environ["OMP_NUM_THREADS"] = "1"

    os.kill = None
    os.system = None
    os.putenv = None
    os.remove = None
    os.removedirs = None
    os.rmdir = None
    os.fchdir = None
    os.setuid = None
    os.fork = None
    os.forkpty = None
    os.killpg = None
    os.rename = None
    os.renames = None
    os.truncate = None
    os.replace = None
    os.unlink = None
    os.fchmod = None
    os.fchown = None
    os.chmod = None
    os.chown = None
    os.chroot = None
    os.fchdir = None
    os.lchflags = None
    os.lchmod = None
    os.lchown = None
    os.getcwd = None
    os.chdir = None
    builtins.open = None

    import shutil

    shutil.rmtree = None
    shutil.move = None
    shutil.chown = None

    import subprocess

    subprocess.Popen = None  # type: ignore

    builtins.help = None  # CHANGED: __builtins__ is a module in a script

    import sys

    sys.modules["ipdb"] = None
    sys.modules["joblib"] = None
    sys.modules["resource"] = None
    sys.modules["psutil"] = None
    sys.modules["tkinter"] = None


# evalplus/gen/util/__init__.py
def trusted_exec(code, inputs, entry_point, record_time=False, output_not_none=False):
    """Execute trusted code in place."""
    exec_globals = {}
    exec(code, exec_globals)
    fn = exec_globals[entry_point]

    rtime = []
    ret = []
    for inp in inputs:
        inp = deepcopy(inp)
        if record_time:
            start = time.time()
            ret.append(fn(*inp))
            rtime.append(time.time() - start)
        else:
            ret.append(fn(*inp))

    if output_not_none:
        ret = [i is not None for i in ret]

    if record_time:
        return ret, rtime
    else:
        return ret


# evalplus/data/mbpp.py
def mbpp_deserialize_inputs(task_id: str, inputs: list) -> list:
    task_id = int(task_id.split("/")[-1])
    if task_id in [
        2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560, 579,
        596, 616, 630, 726, 740, 744, 809,
    ]:
        modified_inputs = [[tuple(lst) for lst in inp] for inp in inputs]

    elif task_id in [63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780]:
        modified_inputs = [
            [[tuple(lst) for lst in lst_lst] for lst_lst in inp] for inp in inputs
        ]

    elif task_id in [75, 413, 444, 753]:
        modified_inputs = [
            [[tuple(lst) for lst in inp[0]]] + [inp[1]] for inp in inputs
        ]

    elif task_id == 106 or task_id == 750:
        modified_inputs = [[inp[0]] + [tuple(inp[1])] for inp in inputs]

    elif task_id == 115:
        modified_inputs = [
            [
                [
                    set(item) if isinstance(item, list) and len(item) else {}
                    for item in inp[0]
                ]
            ]
            for inp in inputs
        ]

    elif task_id == 124:
        modified_inputs = [(float(inp[0]), complex(inp[1])) for inp in inputs]

    elif task_id in [250, 405, 446, 617, 720, 763, 808]:
        modified_inputs = [[tuple(inp[0])] + [inp[1]] for inp in inputs]

    elif task_id in [259, 401, 445]:
        modified_inputs = [
            [[tuple(lst) for lst in lst_lst] for lst_lst in inp] for inp in inputs
        ]
        modified_inputs = [[tuple(lst) for lst in inp] for inp in modified_inputs]

    elif task_id == 278:
        modified_inputs = [
            [[tuple(item) if isinstance(item, list) else item for item in inp[0]]]
            for inp in inputs
        ]
        modified_inputs = [[tuple(lst) for lst in inp] for inp in modified_inputs]

    elif task_id == 307:
        modified_inputs = [[tuple(inp[0])] + [inp[1], inp[2]] for inp in inputs]

    elif task_id == 722:
        modified_inputs = [
            [{key: tuple(value) for key, value in inp[0].items()}] + inp[1:]
            for inp in inputs
        ]

    elif task_id == 252:
        modified_inputs = [[complex(inp[0])] for inp in inputs]

    elif task_id in [580, 615, 791]:

        def turn_all_list_into_tuple(inp):
            if isinstance(inp, list):
                return tuple([turn_all_list_into_tuple(item) for item in inp])
            return inp

        modified_inputs = [turn_all_list_into_tuple(inp) for inp in inputs]

    else:
        modified_inputs = inputs

    return modified_inputs


# evalplus/eval/_special_oracle.py
MBPP_OUTPUT_NOT_NONE_TASKS = ["check_str", "text_match_three", "text_starta_endb"]

MBPP_OUTPUT_SET_EQ_TASKS = [
    "similar_elements",  # Mbpp/2
    "find_char_long",  # Mbpp/7
    "common_in_nested_lists",  # Mbpp/111
    "extract_singly",  # Mbpp/140
    "larg_nnum",  # Mbpp/232
    "intersection_array",  # Mbpp/249
    "find_dissimilar",  # Mbpp/579
    "Diff",  # Mbpp/769
]


def _surface_Area(base_edge, height):
    slant_height = math.sqrt((base_edge / 2) ** 2 + height**2)
    base_area = base_edge**2
    lateral_area = 4 * (base_edge * slant_height) / 2
    total_surface_area = base_area + lateral_area
    return round(total_surface_area)


def _digit_distance_nums(num1, num2):
    str_num1, str_num2 = str(num1), str(num2)
    max_length = max(len(str_num1), len(str_num2))
    str_num1, str_num2 = str_num1.zfill(max_length), str_num2.zfill(max_length)
    total_difference = 0
    for digit1, digit2 in zip(str_num1, str_num2):
        difference = abs(int(digit1) - int(digit2))
        total_difference += difference
    return total_difference


def _poly(xs: list, x: float):
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


# evalplus/eval/__init__.py
PASS = "pass"
FAIL = "fail"
TIMEOUT = "timeout"

_SUCCESS = 0
_FAILED = 1
_TIMEOUT = 2
_UNKNOWN = 3

_mapping = {_SUCCESS: PASS, _FAILED: FAIL, _TIMEOUT: TIMEOUT, _UNKNOWN: None}

DEFAULT_GT_TIME_LIMIT_FACTOR = 4.0  # evalplus/config.py
DEFAULT_MIN_TIME_LIMIT = 4.0


def is_floats(x) -> bool:
    # check if it is float; List[float]; Tuple[float]
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)) and x:
        return all(isinstance(i, float) for i in x)
    if isinstance(x, np.ndarray):
        return x.dtype == np.float64 or x.dtype == np.float32
    return False


class _Value:  # CHANGED: stands for multiprocessing.Value in the child
    def __init__(self, v):
        self.value = v


def unsafe_execute(
    dataset: str,
    entry_point: str,
    code: str,
    inputs,
    expected,
    time_limits,
    atol,
    fast_check,
    stat,  # Value
    details,  # Array
    progress,  # Value
    why=None,  # CHANGED: a list that gets the first failure's exception name
):
    # CHANGED: no create_tempdir (the sandbox's directory is scratch)
    reliability_guard()
    exec_globals = {}
    try:
        with swallow_io():
            exec(code, exec_globals)
            fn = exec_globals[entry_point]

        for i, inp in enumerate(inputs):
            try:
                with time_limit(time_limits[i]):
                    with swallow_io():
                        out = fn(*inp)

                exp = expected[i]
                exact_match = out == exp

                # ================================================ #
                # ============== special oracles ================= #
                if dataset == "mbpp":
                    if "are_equivalent" == entry_point:  # Mbpp/164 special oracle
                        exact_match = exact_match or True
                    elif "sum_div" == entry_point:  # Mbpp/295 special oracle
                        exact_match = exact_match or out == 0
                    elif "surface_Area" == entry_point:  # Mbpp/581 special oracle
                        exact_match = (
                            exact_match or abs(out - _surface_Area(*inp)) <= atol
                        )
                    elif (
                        "digit_distance_nums" == entry_point
                    ):  # Mbpp/558 special oracle
                        exact_match = exact_match or out == _digit_distance_nums(
                            *inp
                        )
                    elif entry_point in MBPP_OUTPUT_SET_EQ_TASKS:
                        exact_match = set(out) == set(exp)
                    elif entry_point in MBPP_OUTPUT_NOT_NONE_TASKS:
                        # exp is True  if not None
                        #        False if None
                        if isinstance(out, bool):
                            exact_match = out == exp
                        else:
                            exact_match = exp == (out is not None)

                if dataset == "humaneval":
                    if "find_zero" == entry_point:
                        assert abs(_poly(*inp, out)) <= atol
                        details[i] = True
                        progress.value += 1
                        continue
                # ============== special oracles ================= #
                # ================================================ #

                if atol == 0 and is_floats(exp):
                    atol = 1e-6  # enforce atol for float comparison
                if not exact_match and atol != 0:
                    # explicitly set rtol=1e-07
                    # to match `np.testing.assert_allclose`'s default values
                    assert type(out) == type(exp)
                    if isinstance(exp, (list, tuple)):
                        assert len(out) == len(exp)
                    assert np.allclose(out, exp, rtol=1e-07, atol=atol)
                else:
                    assert exact_match
            except BaseException as e:
                details[i] = False
                progress.value += 1
                if why is not None and not why:  # CHANGED: say why
                    why.append("input %d: %s" % (i, type(e).__name__))
                if fast_check:
                    raise
                continue

            details[i] = True
            progress.value += 1

        stat.value = _SUCCESS
    except BaseException:
        stat.value = _FAILED


def untrusted_check(
    dataset, code, inputs, entry_point, expected, atol, ref_time, fast_check=False,
    min_time_limit=DEFAULT_MIN_TIME_LIMIT, gt_time_limit_factor=DEFAULT_GT_TIME_LIMIT_FACTOR,
    timeout_per_task=60,
):
    time_limits = [max(min_time_limit, gt_time_limit_factor * t) for t in ref_time]
    timeout = min(timeout_per_task, sum(time_limits)) + 1
    if not fast_check:
        timeout += 1  # extra time for data collection

    # CHANGED: a forked child and a pipe instead of multiprocessing.Process
    # and shared memory (the same fork, the same kill at the deadline).
    r, w = os.pipe()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        stat, progress = _Value(_UNKNOWN), _Value(0)
        details = [False for _ in range(len(inputs))]
        why = []
        try:
            unsafe_execute(dataset, entry_point, code, inputs, expected, time_limits, atol,
                           fast_check, stat, details, progress, why)
        finally:
            os.write(w, json.dumps([stat.value, details[: progress.value], why]).encode())
            os._exit(0)
    os.close(w)
    deadline = time.monotonic() + timeout + 1
    buf = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([r], [], [], left)
        if not ready:
            break
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        buf += chunk
    os.close(r)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    why = ["killed at the set's deadline"]  # CHANGED: say why
    try:
        stat_value, details, why = json.loads(buf)
    except ValueError:
        stat_value, details = _UNKNOWN, []

    stat = _mapping[stat_value]

    if not stat:
        stat = TIMEOUT

    if stat == PASS:
        if len(details) != len(inputs) or not all(details):
            stat = FAIL

    return stat, details, why  # CHANGED: and why


# ---------------------------------------------------------------- driver
def main():
    req = json.load(sys.stdin)
    task, dataset = req["task"], req["dataset"]
    if dataset == "mbpp":  # evalplus/data/mbpp.py get_mbpp_plus
        task["base_input"] = mbpp_deserialize_inputs(task["task_id"], task["base_input"])
        task["plus_input"] = mbpp_deserialize_inputs(task["task_id"], task["plus_input"])
    not_none = MBPP_OUTPUT_NOT_NONE_TASKS if dataset == "mbpp" else []
    # evalplus/evaluate.py get_groundtruth, for this task
    oracle = {}
    oracle["base"], oracle["base_time"] = trusted_exec(
        task["prompt"] + task["canonical_solution"], task["base_input"], task["entry_point"],
        record_time=True, output_not_none=task["entry_point"] in not_none)
    oracle["plus"], oracle["plus_time"] = trusted_exec(
        task["prompt"] + task["canonical_solution"], task["plus_input"], task["entry_point"],
        record_time=True, output_not_none=task["entry_point"] in not_none)
    verdicts = []
    for code in req["candidates"]:
        # evalplus/evaluate.py check_correctness, fast_check as by default
        v = {}
        for s in ("base", "plus"):
            v[s], _, why = untrusted_check(dataset, code, task[s + "_input"], task["entry_point"],
                                      expected=oracle[s], atol=task["atol"], ref_time=oracle[s + "_time"],
                                      fast_check=True, timeout_per_task=req.get("timeout_per_task", 60))
            if why:  # CHANGED: why a set failed, for the test's messages
                v[s + "_why"] = why[0]
        verdicts.append(v)
    sys.stdout.write(json.dumps({"verdicts": verdicts}) + "\n")


main()
