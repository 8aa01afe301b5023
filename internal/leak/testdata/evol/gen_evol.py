#!/usr/bin/env python3
"""Writes evol_style.jsonl: an Evol-Instruct-STYLE sample written for the
audit's precision/recall test (TestEvolStyleSample). It is our own sample,
not the real Evol-Instruct corpus (which is not in the shared data).

Records have the dataset's form (instruction, output) plus labels:
  label  "leak" (the record asks for benchmark task `task`) or "clean";
  kind   how it was made (see below).
Leak kinds:
  wrapped     "Increase the difficulty of the given programming test
              question" around the HumanEval prompt (signature and
              docstring; {prompt} is filled from the benchmark at test
              time, so no benchmark text is stored here), with our own
              evolved solution;
  reworded    an MBPP task reworded and evolved (extra constraints), the
              solution the reference algorithm under other names;
  literal     reworded, the solution keeping a table or pattern only that
              task's reference holds;
  rewritten   reworded, a different algorithm: no code or words in common
              (expected missed without a judge).
Clean kind:
  textbook    a classic textbook task (not a HumanEval/MBPP task), evolved
              in two ways, each in two code styles: hard negatives.
Run: python3 gen_evol.py > evol_style.jsonl
"""
import json
import sys

EVOLVE = [
    "{base} Make sure the function validates its input and raises a ValueError on invalid arguments.",
    "{base} Explain the approach briefly and state the time complexity of your solution.",
    "{base} Do not use any third-party libraries, and include a short usage example.",
    "Rewrite the following task so that it is slightly harder, then solve it: {base} Handle empty inputs gracefully.",
]

ANSWER = [
    "Here is a Python implementation:\n\n```python\n{code}\n```\n\nThe function handles the edge cases described above.",
    "```python\n{code}\n```\n\nThis runs in linear time in the size of the input for the common case.",
    "Sure. One way to do it:\n\n```python\n{code}\n```",
]

# Classic textbook tasks that are not HumanEval or MBPP tasks: (name, ask,
# [code variants]).
TEXTBOOK = [
    ("fizzbuzz_words", "Write a function that returns the FizzBuzz sequence from 1 to n as a list of strings, using 'Foo' for multiples of 3 and 'Bar' for multiples of 7.", [
        "def foo_bar(n):\n    out = []\n    for i in range(1, n + 1):\n        word = ''\n        if i % 3 == 0:\n            word += 'Foo'\n        if i % 7 == 0:\n            word += 'Bar'\n        out.append(word or str(i))\n    return out",
        "def foo_bar(limit):\n    return ['Foo' * (k % 3 == 0) + 'Bar' * (k % 7 == 0) or str(k) for k in range(1, limit + 1)]",
    ]),
    ("leap_years", "Write a function that lists all leap years between two given years, inclusive.", [
        "def leap_years(start, end):\n    years = []\n    for y in range(start, end + 1):\n        if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0:\n            years.append(y)\n    return years",
        "import calendar\n\ndef leap_years(start, end):\n    return [y for y in range(start, end + 1) if calendar.isleap(y)]",
    ]),
    ("temp_table", "Write a function that prints a Celsius to Fahrenheit conversion table from 0 to 100 degrees in steps of 10.", [
        "def print_table(step=10):\n    print(f\"{'C':>5} {'F':>7}\")\n    for c in range(0, 101, step):\n        f = c * 9 / 5 + 32\n        print(f'{c:>5} {f:>7.1f}')",
        "def conversion_table():\n    rows = [(c, c * 1.8 + 32) for c in range(0, 101, 10)]\n    for c, f in rows:\n        print(c, '->', round(f, 1))\n    return rows",
    ]),
    ("bmi_category", "Write a function that computes the body mass index from weight in kilograms and height in metres and returns its WHO category.", [
        "def bmi_category(weight, height):\n    bmi = weight / height ** 2\n    if bmi < 18.5:\n        return 'underweight'\n    elif bmi < 25:\n        return 'normal'\n    elif bmi < 30:\n        return 'overweight'\n    return 'obese'",
        "def classify_bmi(kg, metres):\n    value = kg / (metres * metres)\n    for limit, label in ((18.5, 'underweight'), (25, 'normal'), (30, 'overweight')):\n        if value < limit:\n            return label\n    return 'obese'",
    ]),
    ("mat_mult", "Write a function that multiplies two matrices given as lists of lists, checking that their dimensions are compatible.", [
        "def mat_mult(a, b):\n    if len(a[0]) != len(b):\n        raise ValueError('incompatible dimensions')\n    result = [[0] * len(b[0]) for _ in range(len(a))]\n    for i in range(len(a)):\n        for j in range(len(b[0])):\n            for k in range(len(b)):\n                result[i][j] += a[i][k] * b[k][j]\n    return result",
        "def matrix_product(x, y):\n    if len(x[0]) != len(y):\n        raise ValueError('shape mismatch')\n    cols = list(zip(*y))\n    return [[sum(p * q for p, q in zip(row, col)) for col in cols] for row in x]",
    ]),
    ("reverse_linked", "Implement a singly linked list node class and a function that reverses the list in place, returning the new head.", [
        "class Node:\n    def __init__(self, value, next=None):\n        self.value = value\n        self.next = next\n\ndef reverse(head):\n    prev = None\n    while head:\n        nxt = head.next\n        head.next = prev\n        prev = head\n        head = nxt\n    return prev",
        "class ListNode:\n    def __init__(self, val=0, nxt=None):\n        self.val = val\n        self.nxt = nxt\n\ndef reverse_list(node, prev=None):\n    if node is None:\n        return prev\n    rest = node.nxt\n    node.nxt = prev\n    return reverse_list(rest, node)",
    ]),
    ("min_stack", "Implement a stack class that supports push, pop and retrieving the minimum element in constant time.", [
        "class MinStack:\n    def __init__(self):\n        self.items = []\n        self.mins = []\n\n    def push(self, x):\n        self.items.append(x)\n        if not self.mins or x <= self.mins[-1]:\n            self.mins.append(x)\n\n    def pop(self):\n        x = self.items.pop()\n        if x == self.mins[-1]:\n            self.mins.pop()\n        return x\n\n    def get_min(self):\n        return self.mins[-1]",
        "class MinStack:\n    def __init__(self):\n        self.data = []\n\n    def push(self, value):\n        low = value if not self.data else min(value, self.data[-1][1])\n        self.data.append((value, low))\n\n    def pop(self):\n        return self.data.pop()[0]\n\n    def minimum(self):\n        return self.data[-1][1]",
    ]),
    ("queue_two_stacks", "Implement a FIFO queue using only two stacks, with enqueue and dequeue operations.", [
        "class Queue:\n    def __init__(self):\n        self.inbox = []\n        self.outbox = []\n\n    def enqueue(self, x):\n        self.inbox.append(x)\n\n    def dequeue(self):\n        if not self.outbox:\n            while self.inbox:\n                self.outbox.append(self.inbox.pop())\n        if not self.outbox:\n            raise IndexError('dequeue from empty queue')\n        return self.outbox.pop()",
        "class StackQueue:\n    def __init__(self):\n        self.front, self.back = [], []\n\n    def put(self, item):\n        self.back.append(item)\n\n    def get(self):\n        if not self.front:\n            self.front = self.back[::-1]\n            self.back = []\n        return self.front.pop()",
    ]),
    ("binary_search_first", "Write a function that returns the index of the first occurrence of a target in a sorted list, or -1, using binary search.", [
        "def first_index(items, target):\n    lo, hi = 0, len(items) - 1\n    found = -1\n    while lo <= hi:\n        mid = (lo + hi) // 2\n        if items[mid] < target:\n            lo = mid + 1\n        elif items[mid] > target:\n            hi = mid - 1\n        else:\n            found = mid\n            hi = mid - 1\n    return found",
        "import bisect\n\ndef first_index(seq, x):\n    i = bisect.bisect_left(seq, x)\n    return i if i < len(seq) and seq[i] == x else -1",
    ]),
    ("fib_memo", "Write a memoised function that returns the n-th Fibonacci number for large n, and a generator that yields the sequence.", [
        "from functools import lru_cache\n\n@lru_cache(maxsize=None)\ndef fibo(n):\n    if n < 2:\n        return n\n    return fibo(n - 1) + fibo(n - 2)\n\ndef fibo_gen():\n    a, b = 0, 1\n    while True:\n        yield a\n        a, b = b, a + b",
        "memo = {0: 0, 1: 1}\n\ndef fibonacci_number(k):\n    if k not in memo:\n        memo[k] = fibonacci_number(k - 1) + fibonacci_number(k - 2)\n    return memo[k]",
    ]),
    ("armstrong_range", "Write a function that finds all Armstrong (narcissistic) numbers in a given range.", [
        "def armstrong_numbers(lo, hi):\n    found = []\n    for n in range(lo, hi + 1):\n        digits = str(n)\n        power = len(digits)\n        if sum(int(d) ** power for d in digits) == n:\n            found.append(n)\n    return found",
        "def is_armstrong(value):\n    s = str(value)\n    total = 0\n    for ch in s:\n        total += int(ch) ** len(s)\n    return total == value\n\ndef armstrong_numbers(a, b):\n    return list(filter(is_armstrong, range(a, b + 1)))",
    ]),
    ("anagram_groups", "Write a function that groups a list of words into lists of anagrams.", [
        "from collections import defaultdict\n\ndef group_anagrams(words):\n    groups = defaultdict(list)\n    for w in words:\n        groups[''.join(sorted(w))].append(w)\n    return list(groups.values())",
        "def group_anagrams(words):\n    table = {}\n    for word in words:\n        key = tuple(sorted(word.lower()))\n        table.setdefault(key, []).append(word)\n    return [g for g in table.values()]",
    ]),
    ("pangram_missing", "Write a function that returns the letters of the alphabet missing from a sentence, so an empty result means the sentence is a pangram.", [
        "import string\n\ndef missing_letters(sentence):\n    present = set(sentence.lower())\n    return [c for c in string.ascii_lowercase if c not in present]",
        "def missing_letters(text):\n    seen = set()\n    for ch in text.lower():\n        if ch.isalpha():\n            seen.add(ch)\n    return sorted(set('abcdefghijklmnopqrstuvwxyz') - seen)",
    ]),
    ("top_k_words", "Write a function that returns the k most frequent words of a text, ignoring case and punctuation.", [
        "import re\nfrom collections import Counter\n\ndef top_words(text, k):\n    words = re.findall(r\"[a-z']+\", text.lower())\n    return Counter(words).most_common(k)",
        "def top_words(text, k=3):\n    counts = {}\n    for raw in text.split():\n        w = raw.strip('.,;:!?\"()').lower()\n        if w:\n            counts[w] = counts.get(w, 0) + 1\n    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]",
    ]),
    ("balanced_brackets", "Write a function that checks whether a string of parentheses, square brackets and curly braces is balanced.", [
        "def is_balanced(s):\n    pairs = {')': '(', ']': '[', '}': '{'}\n    stack = []\n    for ch in s:\n        if ch in '([{':\n            stack.append(ch)\n        elif ch in pairs:\n            if not stack or stack.pop() != pairs[ch]:\n                return False\n    return not stack",
        "def balanced(expr):\n    prev = None\n    while prev != expr:\n        prev = expr\n        expr = expr.replace('()', '').replace('[]', '').replace('{}', '')\n    return expr == ''",
    ]),
    ("two_sum", "Write a function that, given a list of integers and a target, returns the indices of the two numbers that add up to the target.", [
        "def two_sum(nums, target):\n    seen = {}\n    for i, n in enumerate(nums):\n        if target - n in seen:\n            return seen[target - n], i\n        seen[n] = i\n    return None",
        "def two_sum(values, goal):\n    for i in range(len(values)):\n        for j in range(i + 1, len(values)):\n            if values[i] + values[j] == goal:\n                return [i, j]\n    return []",
    ]),
    ("merge_sorted_lists", "Write a function that merges two sorted lists into one sorted list without calling sort.", [
        "def merge(a, b):\n    i = j = 0\n    out = []\n    while i < len(a) and j < len(b):\n        if a[i] <= b[j]:\n            out.append(a[i])\n            i += 1\n        else:\n            out.append(b[j])\n            j += 1\n    out.extend(a[i:])\n    out.extend(b[j:])\n    return out",
        "import heapq\n\ndef merge(first, second):\n    return list(heapq.merge(first, second))",
    ]),
    ("decimal_to_base", "Write a function that converts a non-negative integer to its representation in any base from 2 to 16.", [
        "def to_base(n, base):\n    digits = '0123456789ABCDEF'\n    if n == 0:\n        return '0'\n    out = ''\n    while n > 0:\n        out = digits[n % base] + out\n        n //= base\n    return out",
        "def to_base(number, b):\n    if not 2 <= b <= 16:\n        raise ValueError('base out of range')\n    if number < b:\n        return '0123456789ABCDEF'[number]\n    return to_base(number // b, b) + '0123456789ABCDEF'[number % b]",
    ]),
    ("compound_interest", "Write a function that returns the balance of a savings account after a number of years with compound interest and yearly deposits.", [
        "def balance(principal, rate, years, deposit=0.0):\n    total = principal\n    for _ in range(years):\n        total = total * (1 + rate / 100) + deposit\n    return round(total, 2)",
        "def future_value(p, r, n, yearly=0):\n    growth = (1 + r / 100) ** n\n    if r == 0:\n        return p + yearly * n\n    return round(p * growth + yearly * (growth - 1) / (r / 100), 2)",
    ]),
    ("calculator", "Write a function that evaluates a simple arithmetic expression given as two numbers and an operator string, handling division by zero.", [
        "def calculate(a, op, b):\n    if op == '+':\n        return a + b\n    if op == '-':\n        return a - b\n    if op == '*':\n        return a * b\n    if op == '/':\n        if b == 0:\n            raise ZeroDivisionError('division by zero')\n        return a / b\n    raise ValueError(f'unknown operator {op}')",
        "import operator\n\nOPS = {'+': operator.add, '-': operator.sub, '*': operator.mul, '/': operator.truediv}\n\ndef calculate(x, sign, y):\n    try:\n        return OPS[sign](x, y)\n    except KeyError:\n        raise ValueError('bad operator')",
    ]),
    ("string_compress", "Write a function that compresses a string by replacing runs of repeated characters with the character and the run length, returning the original if it is not shorter.", [
        "def compress(s):\n    if not s:\n        return s\n    parts = []\n    count = 1\n    for i in range(1, len(s) + 1):\n        if i < len(s) and s[i] == s[i - 1]:\n            count += 1\n        else:\n            parts.append(s[i - 1] + str(count))\n            count = 1\n    packed = ''.join(parts)\n    return packed if len(packed) < len(s) else s",
        "from itertools import groupby\n\ndef compress(text):\n    packed = ''.join(f'{ch}{len(list(run))}' for ch, run in groupby(text))\n    return min(packed, text, key=len)",
    ]),
    ("longest_common_prefix", "Write a function that returns the longest common prefix of a list of strings.", [
        "def common_prefix(words):\n    if not words:\n        return ''\n    prefix = words[0]\n    for w in words[1:]:\n        while not w.startswith(prefix):\n            prefix = prefix[:-1]\n    return prefix",
        "import os\n\ndef common_prefix(strs):\n    return os.path.commonprefix(strs) if strs else ''",
    ]),
    ("rotate_array", "Write a function that rotates a list to the right by k steps in place.", [
        "def rotate(nums, k):\n    k %= len(nums)\n    nums[:] = nums[-k:] + nums[:-k]\n    return nums",
        "def rotate(arr, steps):\n    def rev(lo, hi):\n        while lo < hi:\n            arr[lo], arr[hi] = arr[hi], arr[lo]\n            lo, hi = lo + 1, hi - 1\n    steps %= len(arr)\n    rev(0, len(arr) - 1)\n    rev(0, steps - 1)\n    rev(steps, len(arr) - 1)\n    return arr",
    ]),
    ("tic_tac_toe", "Write a function that returns the winner of a finished tic-tac-toe board given as three strings, or None.", [
        "def winner(board):\n    lines = [row for row in board]\n    lines += [''.join(col) for col in zip(*board)]\n    lines.append(board[0][0] + board[1][1] + board[2][2])\n    lines.append(board[0][2] + board[1][1] + board[2][0])\n    for line in lines:\n        if line in ('XXX', 'OOO'):\n            return line[0]\n    return None",
        "WINS = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]\n\ndef winner(rows):\n    cells = ''.join(rows)\n    for a, b, c in WINS:\n        if cells[a] != '.' and cells[a] == cells[b] == cells[c]:\n            return cells[a]\n    return None",
    ]),
    ("bank_account", "Implement a BankAccount class with deposit, withdraw (refusing overdrafts) and a transaction history.", [
        "class BankAccount:\n    def __init__(self, owner, balance=0):\n        self.owner = owner\n        self.balance = balance\n        self.history = []\n\n    def deposit(self, amount):\n        if amount <= 0:\n            raise ValueError('deposit must be positive')\n        self.balance += amount\n        self.history.append(('deposit', amount))\n\n    def withdraw(self, amount):\n        if amount > self.balance:\n            raise ValueError('insufficient funds')\n        self.balance -= amount\n        self.history.append(('withdraw', amount))",
        "class Account:\n    def __init__(self):\n        self.log = []\n\n    @property\n    def balance(self):\n        return sum(self.log)\n\n    def deposit(self, x):\n        self.log.append(x)\n\n    def withdraw(self, x):\n        if x > self.balance:\n            return False\n        self.log.append(-x)\n        return True",
    ]),
    ("percent_grades", "Write a function that converts exam percentages into letter grades: 90 and above A, 80 B, 70 C, 60 D, otherwise F.", [
        "def letter(score):\n    if score >= 90:\n        return 'A'\n    elif score >= 80:\n        return 'B'\n    elif score >= 70:\n        return 'C'\n    elif score >= 60:\n        return 'D'\n    return 'F'\n\ndef letters(scores):\n    return [letter(s) for s in scores]",
        "import bisect\n\ndef letters(scores, cutoffs=(60, 70, 80, 90), grades='FDCBA'):\n    return [grades[bisect.bisect(cutoffs, s)] for s in scores]",
    ]),
    ("sieve_segment", "Write a function that returns all primes in a range [lo, hi] using a segmented sieve.", [
        "def primes_between(lo, hi):\n    limit = int(hi ** 0.5) + 1\n    base = [True] * (limit + 1)\n    small = []\n    for i in range(2, limit + 1):\n        if base[i]:\n            small.append(i)\n            for j in range(i * i, limit + 1, i):\n                base[j] = False\n    mark = [True] * (hi - lo + 1)\n    for p in small:\n        start = max(p * p, (lo + p - 1) // p * p)\n        for m in range(start, hi + 1, p):\n            mark[m - lo] = False\n    return [lo + i for i, ok in enumerate(mark) if ok and lo + i > 1]",
        "def primes_between(a, b):\n    flags = [True] * (b + 1)\n    flags[0:2] = [False, False]\n    p = 2\n    while p * p <= b:\n        if flags[p]:\n            flags[p * p::p] = [False] * len(flags[p * p::p])\n        p += 1\n    return [n for n in range(a, b + 1) if flags[n]]",
    ]),
    ("char_classes", "Write a function that counts the uppercase letters, lowercase letters, digits and spaces in a string and returns them in a dictionary.", [
        "def char_classes(s):\n    counts = {'upper': 0, 'lower': 0, 'digit': 0, 'space': 0}\n    for ch in s:\n        if ch.isupper():\n            counts['upper'] += 1\n        elif ch.islower():\n            counts['lower'] += 1\n        elif ch.isdigit():\n            counts['digit'] += 1\n        elif ch.isspace():\n            counts['space'] += 1\n    return counts",
        "def char_classes(text):\n    return {\n        'upper': sum(c.isupper() for c in text),\n        'lower': sum(c.islower() for c in text),\n        'digit': sum(c.isdigit() for c in text),\n        'space': sum(c.isspace() for c in text),\n    }",
    ]),
    ("linear_fit", "Write a function that fits a straight line to points by least squares and returns its slope and intercept.", [
        "def fit_line(xs, ys):\n    n = len(xs)\n    mx = sum(xs) / n\n    my = sum(ys) / n\n    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))\n    sxx = sum((x - mx) ** 2 for x in xs)\n    slope = sxy / sxx\n    return slope, my - slope * mx",
        "def fit_line(points):\n    n = len(points)\n    sx = sy = sxx = sxy = 0.0\n    for x, y in points:\n        sx += x\n        sy += y\n        sxx += x * x\n        sxy += x * y\n    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)\n    return slope, (sy - slope * sx) / n",
    ]),
    ("moving_average", "Write a function that returns the moving averages of a list over a window of k elements.", [
        "def moving_average(values, k):\n    if k <= 0 or k > len(values):\n        return []\n    window = sum(values[:k])\n    out = [window / k]\n    for i in range(k, len(values)):\n        window += values[i] - values[i - k]\n        out.append(window / k)\n    return out",
        "from itertools import islice\nfrom collections import deque\n\ndef moving_average(seq, size):\n    it = iter(seq)\n    d = deque(islice(it, size - 1), maxlen=size)\n    out = []\n    for x in it:\n        d.append(x)\n        out.append(sum(d) / size)\n    return out",
    ]),
    ("password_gen", "Write a function that generates a random password of a given length containing at least one letter, one digit and one symbol.", [
        "import random\nimport string\n\ndef make_password(length=12):\n    if length < 3:\n        raise ValueError('length too short')\n    pools = [string.ascii_letters, string.digits, '!@#$%^&*']\n    chars = [random.choice(p) for p in pools]\n    alphabet = ''.join(pools)\n    chars += [random.choice(alphabet) for _ in range(length - 3)]\n    random.shuffle(chars)\n    return ''.join(chars)",
        "import secrets\nimport string\n\ndef make_password(n=16):\n    alphabet = string.ascii_letters + string.digits + '!@#$%^&*'\n    while True:\n        pw = ''.join(secrets.choice(alphabet) for _ in range(n))\n        if any(c.isalpha() for c in pw) and any(c.isdigit() for c in pw) and any(not c.isalnum() for c in pw):\n            return pw",
    ]),
    ("csv_column_mean", "Write a function that reads a CSV file and returns the mean of a named numeric column, skipping empty cells.", [
        "import csv\n\ndef column_mean(path, column):\n    total, count = 0.0, 0\n    with open(path, newline='') as f:\n        for row in csv.DictReader(f):\n            cell = row.get(column, '').strip()\n            if cell:\n                total += float(cell)\n                count += 1\n    return total / count if count else None",
        "import pandas as pd\n\ndef column_mean(path, column):\n    frame = pd.read_csv(path)\n    return frame[column].dropna().mean()",
    ]),
    ("lru_cache_class", "Implement an LRU cache class with get and put operations in O(1) time.", [
        "from collections import OrderedDict\n\nclass LRUCache:\n    def __init__(self, capacity):\n        self.capacity = capacity\n        self.store = OrderedDict()\n\n    def get(self, key):\n        if key not in self.store:\n            return -1\n        self.store.move_to_end(key)\n        return self.store[key]\n\n    def put(self, key, value):\n        self.store[key] = value\n        self.store.move_to_end(key)\n        if len(self.store) > self.capacity:\n            self.store.popitem(last=False)",
        "class LRU:\n    def __init__(self, size):\n        self.size = size\n        self.data = {}\n\n    def get(self, k):\n        if k not in self.data:\n            return None\n        v = self.data.pop(k)\n        self.data[k] = v\n        return v\n\n    def put(self, k, v):\n        self.data.pop(k, None)\n        self.data[k] = v\n        if len(self.data) > self.size:\n            del self.data[next(iter(self.data))]",
    ]),
    ("graph_dfs", "Write a function that returns the nodes reachable from a start node in a graph given as an adjacency dictionary, in depth-first order.", [
        "def dfs(graph, start):\n    seen, order = set(), []\n    stack = [start]\n    while stack:\n        node = stack.pop()\n        if node in seen:\n            continue\n        seen.add(node)\n        order.append(node)\n        stack.extend(reversed(graph.get(node, [])))\n    return order",
        "def dfs(adj, node, visited=None):\n    if visited is None:\n        visited = []\n    visited.append(node)\n    for nxt in adj.get(node, ()):\n        if nxt not in visited:\n            dfs(adj, nxt, visited)\n    return visited",
    ]),
    ("grid_bfs", "Write a function that returns the length of the shortest path from the top-left to the bottom-right cell of a grid of 0s (free) and 1s (walls), moving in four directions.", [
        "from collections import deque\n\ndef shortest_path(grid):\n    rows, cols = len(grid), len(grid[0])\n    if grid[0][0] or grid[rows - 1][cols - 1]:\n        return -1\n    dist = {(0, 0): 1}\n    q = deque([(0, 0)])\n    while q:\n        r, c = q.popleft()\n        if (r, c) == (rows - 1, cols - 1):\n            return dist[(r, c)]\n        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):\n            nr, nc = r + dr, c + dc\n            if 0 <= nr < rows and 0 <= nc < cols and not grid[nr][nc] and (nr, nc) not in dist:\n                dist[(nr, nc)] = dist[(r, c)] + 1\n                q.append((nr, nc))\n    return -1",
        "def shortest_path(maze):\n    h, w = len(maze), len(maze[0])\n    frontier, seen, steps = [(0, 0)], {(0, 0)}, 1\n    while frontier:\n        nxt = []\n        for y, x in frontier:\n            if (y, x) == (h - 1, w - 1):\n                return steps\n            for yy, xx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):\n                if 0 <= yy < h and 0 <= xx < w and maze[yy][xx] == 0 and (yy, xx) not in seen:\n                    seen.add((yy, xx))\n                    nxt.append((yy, xx))\n        frontier, steps = nxt, steps + 1\n    return -1",
    ]),
    ("knapsack", "Write a function that solves the 0/1 knapsack problem: given weights, values and a capacity, return the best total value.", [
        "def knapsack(weights, values, capacity):\n    best = [0] * (capacity + 1)\n    for w, v in zip(weights, values):\n        for c in range(capacity, w - 1, -1):\n            best[c] = max(best[c], best[c - w] + v)\n    return best[capacity]",
        "from functools import lru_cache\n\ndef knapsack(wt, val, cap):\n    @lru_cache(None)\n    def go(i, room):\n        if i == len(wt):\n            return 0\n        skip = go(i + 1, room)\n        if wt[i] > room:\n            return skip\n        return max(skip, val[i] + go(i + 1, room - wt[i]))\n    return go(0, cap)",
    ]),
    ("edit_distance", "Write a function that computes the Levenshtein edit distance between two strings.", [
        "def edit_distance(a, b):\n    prev = list(range(len(b) + 1))\n    for i, ca in enumerate(a, 1):\n        cur = [i]\n        for j, cb in enumerate(b, 1):\n            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))\n        prev = cur\n    return prev[-1]",
        "def levenshtein(s, t):\n    dp = [[0] * (len(t) + 1) for _ in range(len(s) + 1)]\n    for i in range(len(s) + 1):\n        dp[i][0] = i\n    for j in range(len(t) + 1):\n        dp[0][j] = j\n    for i in range(1, len(s) + 1):\n        for j in range(1, len(t) + 1):\n            cost = 0 if s[i - 1] == t[j - 1] else 1\n            dp[i][j] = min(dp[i - 1][j] + 1, dp[i][j - 1] + 1, dp[i - 1][j - 1] + cost)\n    return dp[-1][-1]",
    ]),
    ("spiral_order", "Write a function that returns the elements of a matrix in clockwise spiral order.", [
        "def spiral(matrix):\n    out = []\n    while matrix:\n        out += matrix.pop(0)\n        matrix = [list(row) for row in zip(*matrix)][::-1]\n    return out",
        "def spiral(m):\n    res = []\n    top, bottom, left, right = 0, len(m) - 1, 0, len(m[0]) - 1\n    while top <= bottom and left <= right:\n        for j in range(left, right + 1):\n            res.append(m[top][j])\n        top += 1\n        for i in range(top, bottom + 1):\n            res.append(m[i][right])\n        right -= 1\n        if top <= bottom:\n            for j in range(right, left - 1, -1):\n                res.append(m[bottom][j])\n            bottom -= 1\n        if left <= right:\n            for i in range(bottom, top - 1, -1):\n                res.append(m[i][left])\n            left += 1\n    return res",
    ]),
    ("rle_decode", "Write a function that decodes a run-length encoded string such as '3a2b1c' into 'aaabbc'.", [
        "import re\n\ndef decode(encoded):\n    return ''.join(ch * int(n) for n, ch in re.findall(r'(\\d+)(\\D)', encoded))",
        "def decode(s):\n    out, num = [], ''\n    for ch in s:\n        if ch.isdigit():\n            num += ch\n        else:\n            out.append(ch * int(num or 1))\n            num = ''\n    return ''.join(out)",
    ]),
    ("hex_to_rgb", "Write a function that converts a hex colour string like '#1A2B3C' to an RGB tuple, and one that converts back.", [
        "def hex_to_rgb(code):\n    code = code.lstrip('#')\n    if len(code) != 6:\n        raise ValueError('expected six hex digits')\n    return tuple(int(code[i:i + 2], 16) for i in (0, 2, 4))\n\ndef rgb_to_hex(r, g, b):\n    return '#{:02X}{:02X}{:02X}'.format(r, g, b)",
        "def hex_to_rgb(h):\n    value = int(h[1:], 16)\n    return (value >> 16) & 255, (value >> 8) & 255, value & 255\n\ndef rgb_to_hex(rgb):\n    return '#' + ''.join(f'{c:02x}' for c in rgb)",
    ]),
    ("seconds_hms", "Write a function that formats a number of seconds as HH:MM:SS.", [
        "def hms(seconds):\n    hours, rest = divmod(seconds, 3600)\n    minutes, secs = divmod(rest, 60)\n    return f'{hours:02d}:{minutes:02d}:{secs:02d}'",
        "import time\n\ndef hms(total):\n    if total < 0:\n        raise ValueError('negative duration')\n    return time.strftime('%H:%M:%S', time.gmtime(total))",
    ]),
    ("ipv4_valid", "Write a function that checks whether a string is a valid IPv4 address without using regular expressions.", [
        "def valid_ipv4(addr):\n    parts = addr.split('.')\n    if len(parts) != 4:\n        return False\n    for p in parts:\n        if not p.isdigit() or (len(p) > 1 and p[0] == '0'):\n            return False\n        if int(p) > 255:\n            return False\n    return True",
        "import ipaddress\n\ndef valid_ipv4(s):\n    try:\n        ipaddress.IPv4Address(s)\n        return True\n    except ValueError:\n        return False",
    ]),
    ("count_islands", "Write a function that counts the islands (groups of connected 1s, horizontally or vertically) in a grid.", [
        "def count_islands(grid):\n    rows, cols = len(grid), len(grid[0])\n    seen = set()\n\n    def sink(r, c):\n        if r < 0 or c < 0 or r >= rows or c >= cols or grid[r][c] != 1 or (r, c) in seen:\n            return\n        seen.add((r, c))\n        sink(r + 1, c)\n        sink(r - 1, c)\n        sink(r, c + 1)\n        sink(r, c - 1)\n\n    islands = 0\n    for r in range(rows):\n        for c in range(cols):\n            if grid[r][c] == 1 and (r, c) not in seen:\n                sink(r, c)\n                islands += 1\n    return islands",
        "def count_islands(g):\n    g = [row[:] for row in g]\n    count = 0\n    for i in range(len(g)):\n        for j in range(len(g[0])):\n            if g[i][j]:\n                count += 1\n                stack = [(i, j)]\n                while stack:\n                    y, x = stack.pop()\n                    if 0 <= y < len(g) and 0 <= x < len(g[0]) and g[y][x]:\n                        g[y][x] = 0\n                        stack += [(y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)]\n    return count",
    ]),
    ("n_queens", "Write a function that counts the solutions of the n-queens puzzle.", [
        "def n_queens(n):\n    cols, d1, d2 = set(), set(), set()\n\n    def place(r):\n        if r == n:\n            return 1\n        total = 0\n        for c in range(n):\n            if c in cols or r - c in d1 or r + c in d2:\n                continue\n            cols.add(c); d1.add(r - c); d2.add(r + c)\n            total += place(r + 1)\n            cols.remove(c); d1.remove(r - c); d2.remove(r + c)\n        return total\n\n    return place(0)",
        "from itertools import permutations\n\ndef n_queens(n):\n    count = 0\n    for perm in permutations(range(n)):\n        if len({perm[i] + i for i in range(n)}) == n and len({perm[i] - i for i in range(n)}) == n:\n            count += 1\n    return count",
    ]),
    ("merge_intervals", "Write a function that merges overlapping intervals given as a list of [start, end] pairs.", [
        "def merge_intervals(intervals):\n    merged = []\n    for start, end in sorted(intervals):\n        if merged and start <= merged[-1][1]:\n            merged[-1][1] = max(merged[-1][1], end)\n        else:\n            merged.append([start, end])\n    return merged",
        "def merge_intervals(spans):\n    if not spans:\n        return []\n    spans = sorted(spans, key=lambda s: s[0])\n    out = [list(spans[0])]\n    for lo, hi in spans[1:]:\n        last = out[-1]\n        if lo > last[1]:\n            out.append([lo, hi])\n        else:\n            last[1] = max(last[1], hi)\n    return out",
    ]),
    ("dice_stats", "Write a function that simulates rolling two dice n times and returns the frequency of each total.", [
        "import random\nfrom collections import Counter\n\ndef roll_stats(n, seed=None):\n    rng = random.Random(seed)\n    totals = Counter(rng.randint(1, 6) + rng.randint(1, 6) for _ in range(n))\n    return {t: totals[t] / n for t in range(2, 13)}",
        "import random\n\ndef roll_stats(trials):\n    freq = [0] * 13\n    for _ in range(trials):\n        freq[random.randint(1, 6) + random.randint(1, 6)] += 1\n    return {total: freq[total] for total in range(2, 13)}",
    ]),
    ("matrix_determinant", "Write a function that computes the determinant of a square matrix by Laplace expansion.", [
        "def det(m):\n    if len(m) == 1:\n        return m[0][0]\n    if len(m) == 2:\n        return m[0][0] * m[1][1] - m[0][1] * m[1][0]\n    total = 0\n    for c in range(len(m)):\n        minor = [row[:c] + row[c + 1:] for row in m[1:]]\n        total += (-1) ** c * m[0][c] * det(minor)\n    return total",
        "def determinant(a):\n    n = len(a)\n    a = [list(map(float, r)) for r in a]\n    result = 1.0\n    for i in range(n):\n        pivot = max(range(i, n), key=lambda r: abs(a[r][i]))\n        if a[pivot][i] == 0:\n            return 0.0\n        if pivot != i:\n            a[i], a[pivot] = a[pivot], a[i]\n            result = -result\n        result *= a[i][i]\n        for r in range(i + 1, n):\n            f = a[r][i] / a[i][i]\n            for c in range(i, n):\n                a[r][c] -= f * a[i][c]\n    return result",
    ]),
    ("word_wrap", "Write a function that wraps a paragraph of text to lines of at most a given width without breaking words.", [
        "def wrap(text, width):\n    lines, line = [], ''\n    for word in text.split():\n        if line and len(line) + 1 + len(word) > width:\n            lines.append(line)\n            line = word\n        else:\n            line = word if not line else line + ' ' + word\n    if line:\n        lines.append(line)\n    return lines",
        "import textwrap\n\ndef wrap(paragraph, width=40):\n    return textwrap.wrap(paragraph, width=width, break_long_words=False)",
    ]),
    ("roman_clock", "Write a function that returns the angle in degrees between the hour and minute hands of an analogue clock at a given time.", [
        "def clock_angle(hour, minute):\n    hour_angle = (hour % 12) * 30 + minute * 0.5\n    minute_angle = minute * 6\n    diff = abs(hour_angle - minute_angle)\n    return min(diff, 360 - diff)",
        "def clock_angle(h, m):\n    a = abs(30 * (h % 12) - 5.5 * m)\n    return a if a <= 180 else 360 - a",
    ]),
    # Short answers: the one- and two-line textbook code that renamed short
    # benchmark solutions look like.
    ("km_to_miles", "Write a function that converts kilometres to miles.", [
        "def km_to_miles(km):\n    return km * 0.621371",
        "KM_PER_MILE = 1.609344\n\ndef km_to_miles(distance):\n    miles = distance / KM_PER_MILE\n    return round(miles, 3)",
    ]),
    ("name_initials", "Write a function that returns the initials of a person's full name in upper case.", [
        "def initials(name):\n    return ''.join(part[0].upper() for part in name.split())",
        "def initials(full_name):\n    out = ''\n    for word in full_name.split():\n        out += word[0].upper()\n    return out",
    ]),
    ("word_count", "Write a function that returns the number of words in a sentence.", [
        "def word_count(sentence):\n    return len(sentence.split())",
        "def word_count(text):\n    count = 0\n    in_word = False\n    for ch in text:\n        if ch.isspace():\n            in_word = False\n        elif not in_word:\n            in_word = True\n            count += 1\n    return count",
    ]),
    ("clamp", "Write a function that clamps a number into the range [low, high].", [
        "def clamp(x, low, high):\n    return max(low, min(x, high))",
        "def clamp(value, lo, hi):\n    if value < lo:\n        return lo\n    if value > hi:\n        return hi\n    return value",
    ]),
    ("word_lengths", "Write a function that maps each word of a list to its length in a dictionary.", [
        "def word_lengths(words):\n    return {w: len(w) for w in words}",
        "def word_lengths(words):\n    table = {}\n    for word in words:\n        table[word] = len(word)\n    return table",
    ]),
    ("days_between", "Write a function that returns the number of days between two dates given as 'YYYY-MM-DD' strings.", [
        "from datetime import date\n\ndef days_between(a, b):\n    return abs((date.fromisoformat(b) - date.fromisoformat(a)).days)",
        "from datetime import datetime\n\ndef days_between(start, end):\n    fmt = '%Y-%m-%d'\n    delta = datetime.strptime(end, fmt) - datetime.strptime(start, fmt)\n    return abs(delta.days)",
    ]),
    ("invert_dict", "Write a function that swaps the keys and values of a dictionary.", [
        "def invert(d):\n    return {v: k for k, v in d.items()}",
        "def invert(mapping):\n    result = {}\n    for key, value in mapping.items():\n        result[value] = key\n    return result",
    ]),
    ("percentage", "Write a function that returns what percentage a part is of a whole, rounded to two decimals.", [
        "def percentage(part, whole):\n    return round(part / whole * 100, 2)",
        "def percentage(part, total):\n    if total == 0:\n        return 0.0\n    return round(100.0 * part / total, 2)",
    ]),
    ("last_chars", "Write a function that returns the last n characters of a string.", [
        "def last_chars(s, n):\n    return s[-n:] if n > 0 else ''",
        "def last_chars(text, count):\n    start = max(len(text) - count, 0)\n    return text[start:]",
    ]),
    ("line_count", "Write a function that counts the non-empty lines of a text.", [
        "def line_count(text):\n    return sum(1 for line in text.splitlines() if line.strip())",
        "def line_count(text):\n    n = 0\n    for line in text.split('\\n'):\n        if line.strip() != '':\n            n += 1\n    return n",
    ]),
    ("acronym", "Write a function that builds an acronym from a phrase, skipping the words 'of', 'and' and 'the'.", [
        "def acronym(phrase):\n    skip = {'of', 'and', 'the'}\n    return ''.join(w[0].upper() for w in phrase.split() if w.lower() not in skip)",
        "def acronym(phrase):\n    letters = []\n    for word in phrase.split():\n        if word.lower() in ('of', 'and', 'the'):\n            continue\n        letters.append(word[0].upper())\n    return ''.join(letters)",
    ]),
    ("minutes_seconds", "Write a function that converts a number of seconds into a 'M min S s' string.", [
        "def min_sec(seconds):\n    m, s = divmod(seconds, 60)\n    return f'{m} min {s} s'",
        "def min_sec(total):\n    minutes = total // 60\n    rest = total % 60\n    return str(minutes) + ' min ' + str(rest) + ' s'",
    ]),
    ("avg_word_length", "Write a function that returns the average word length of a sentence.", [
        "def avg_word_length(sentence):\n    words = sentence.split()\n    return sum(len(w) for w in words) / len(words) if words else 0.0",
        "def avg_word_length(text):\n    words = [w.strip('.,!?') for w in text.split()]\n    total = 0\n    for w in words:\n        total += len(w)\n    return total / max(len(words), 1)",
    ]),
    ("title_case", "Write a function that capitalises the first letter of every word in a sentence.", [
        "def title_case(s):\n    return ' '.join(w[:1].upper() + w[1:] for w in s.split(' '))",
        "def title_case(sentence):\n    return sentence.title()",
    ]),
]

# Leaks. wrapped: HumanEval tasks, the prompt filled at test time.
WRAPPED = [
    ("HumanEval/0", "Additionally, return the pair of closest elements instead of a boolean when such a pair exists.",
     "def has_close_elements(values, limit):\n    ordered = sorted(values)\n    for left, right in zip(ordered, ordered[1:]):\n        if right - left < limit:\n            return True\n    return False"),
    ("HumanEval/3", "The account may now also receive a list of (operation, amount) tuples; support both forms.",
     "def below_zero(ops):\n    balance = 0\n    for op in ops:\n        amount = op[1] if isinstance(op, tuple) else op\n        balance += amount\n        if balance < 0:\n            return True\n    return False"),
    ("HumanEval/7", "Make the match case-insensitive when a flag is passed.",
     "def filter_by_substring(strings, substring, ignore_case=False):\n    if ignore_case:\n        return [s for s in strings if substring.lower() in s.lower()]\n    return [s for s in strings if substring in s]"),
    ("HumanEval/8", "Also support floating point numbers and raise a TypeError on other types.",
     "def sum_product(numbers):\n    total, prod = 0, 1\n    for x in numbers:\n        if not isinstance(x, (int, float)):\n            raise TypeError('numbers only')\n        total += x\n        prod *= x\n    return total, prod"),
    ("HumanEval/12", "If several strings tie, return the one that comes last alphabetically.",
     "def longest(strings):\n    if not strings:\n        return None\n    best = max(len(s) for s in strings)\n    return max(s for s in strings if len(s) == best)"),
    ("HumanEval/16", "Ignore whitespace when counting.",
     "def count_distinct_characters(text):\n    return len({ch.lower() for ch in text if not ch.isspace()})"),
    ("HumanEval/22", "Booleans must not be counted as integers.",
     "def filter_integers(values):\n    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]"),
    ("HumanEval/26", "Solve it in O(n) time.",
     "from collections import Counter\n\ndef remove_duplicates(numbers):\n    counts = Counter(numbers)\n    return [n for n in numbers if counts[n] == 1]"),
    ("HumanEval/28", "Allow an optional separator.",
     "def concatenate(strings, sep=''):\n    return sep.join(strings)"),
    ("HumanEval/34", "Do not use the built-in sorted function.",
     "def unique(items):\n    result = list(set(items))\n    for i in range(1, len(result)):\n        key = result[i]\n        j = i - 1\n        while j >= 0 and result[j] > key:\n            result[j + 1] = result[j]\n            j -= 1\n        result[j + 1] = key\n    return result"),
    ("HumanEval/42", "Let the increment be a parameter defaulting to 1.",
     "def incr_list(items, step=1):\n    return [x + step for x in items]"),
    ("HumanEval/52", "Return the offending elements instead of False when some are not below the threshold.",
     "def below_threshold(nums, limit):\n    over = [n for n in nums if n >= limit]\n    return True if not over else over"),
    ("HumanEval/55", "Compute it iteratively in O(n) time and O(1) space.",
     "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a"),
    ("HumanEval/60", "Support a start value other than 1.",
     "def sum_to_n(n, start=1):\n    return sum(range(start, n + 1))"),
    ("HumanEval/70", "Implement it without sorting more than once.",
     "def strange_sort_list(values):\n    ordered = sorted(values)\n    out = []\n    lo, hi = 0, len(ordered) - 1\n    while lo <= hi:\n        out.append(ordered[lo])\n        if lo != hi:\n            out.append(ordered[hi])\n        lo += 1\n        hi -= 1\n    return out"),
    ("HumanEval/85", "Also return the indices that contributed.",
     "def add(lst):\n    picked = [(i, x) for i, x in enumerate(lst) if i % 2 == 1 and x % 2 == 0]\n    return sum(x for _, x in picked)"),
]

# reworded and literal: MBPP (and a few HumanEval) tasks reworded.
REWORDED = [
    ("Mbpp/2", "reworded", "Given two tuples, return a tuple of the elements they have in common. Extend it so it works for any number of tuples.",
     "def shared_items(first, second):\n    common = tuple(set(first) & set(second))\n    return common"),
    ("Mbpp/4", "reworded", "Using the heapq module, return the n largest numbers of a list in descending order; explain why a heap is efficient here.",
     "import heapq as hq\n\ndef n_biggest(values, count):\n    top = hq.nlargest(count, values)\n    return top"),
    ("Mbpp/12", "reworded", "Sort the rows of a matrix (a list of lists) by the sum of each row, ascending. Add type hints.",
     "def order_rows(matrix):\n    ordered = sorted(matrix, key=sum)\n    return ordered"),
    ("Mbpp/14", "reworded", "Compute the volume of a triangular prism from the base length, base height and prism length, validating that all are positive.",
     "def prism_volume(length, base, height):\n    return ((length * base * height) / 2)"),
    ("Mbpp/19", "reworded", "Determine whether a list of integers has any repeated value, in O(n) time.",
     "def has_repeats(nums):\n    unique_set = set(nums)\n    return len(nums) != len(unique_set)"),
    ("Mbpp/57", "reworded", "Given a list of digits, build the largest number they can form. Evolve it: the list may also be given as a string.",
     "def biggest_number(digits, size):\n    digits.sort(reverse=True)\n    value = digits[0]\n    for k in range(1, size):\n        value = value * 10 + digits[k]\n    return value"),
    ("Mbpp/59", "reworded", "Return the n-th octagonal number, and add a function listing the first n of them.",
     "def octagonal(k):\n    return 3 * k * k - 2 * k"),
    ("Mbpp/64", "reworded", "Sort a list of (subject, mark) pairs by mark using a lambda, and then explain how key functions work.",
     "def sort_by_mark(pairs):\n    pairs.sort(key=lambda item: item[1])\n    return pairs"),
    ("Mbpp/65", "reworded", "Sum all numbers in a nested list of arbitrary depth using recursion.",
     "def deep_sum(items):\n    acc = 0\n    for el in items:\n        if type(el) == type([]):\n            acc = acc + deep_sum(el)\n        else:\n            acc = acc + el\n    return acc"),
    ("Mbpp/67", "reworded", "Compute the n-th Bell number (the number of partitions of a set of n elements) with the Bell triangle.",
     "def bell(n):\n    tri = [[0 for _ in range(n + 1)] for _ in range(n + 1)]\n    tri[0][0] = 1\n    for i in range(1, n + 1):\n        tri[i][0] = tri[i - 1][i - 1]\n        for j in range(1, i + 1):\n            tri[i][j] = tri[i - 1][j - 1] + tri[i][j - 1]\n    return tri[n][0]"),
    ("Mbpp/11", "reworded", "Delete the first and the last occurrence of a given character from a string; leave the string unchanged if the character is absent.",
     "def strip_first_last(text, c):\n    for idx in range(len(text)):\n        if (text[idx] == c):\n            text = text[0 : idx] + text[idx + 1:]\n            break\n    for idx in range(len(text) - 1, -1, -1):\n        if (text[idx] == c):\n            text = text[0 : idx] + text[idx + 1:]\n            break\n    return text"),
    ("Mbpp/61", "reworded", "Count the substrings of a digit string whose digit sum equals their length; aim for linear time.",
     "from collections import defaultdict\n\ndef special_substrings(digits, length):\n    found, running = 0, 0\n    seen = defaultdict(lambda: 0)\n    seen[0] += 1\n    for pos in range(length):\n        running += ord(digits[pos]) - ord('0')\n        found += seen[running - (pos + 1)]\n        seen[running - (pos + 1)] += 1\n    return found"),
    ("HumanEval/156", "literal", "Convert a positive integer up to 1000 into its lowercase Roman numeral string. Evolve the task so it also validates the range.",
     "def to_roman_lower(value):\n    if not 1 <= value <= 1000:\n        raise ValueError('out of range')\n    nums = [1, 4, 5, 9, 10, 40, 50, 90, 100, 400, 500, 900, 1000]\n    syms = ['I', 'IV', 'V', 'IX', 'X', 'XL', 'L', 'XC', 'C', 'CD', 'D', 'CM', 'M']\n    i = len(nums) - 1\n    out = ''\n    while value:\n        count, value = divmod(value, nums[i])\n        out += syms[i] * count\n        i -= 1\n    return out.lower()"),
    ("HumanEval/19", "literal", "You get a space-separated string of number words from 'zero' to 'nine'. Return them sorted from smallest to largest, and reject unknown words.",
     "WORDS = {'zero': 0, 'one': 1, 'two': 2, 'three': 3, 'four': 4, 'five': 5, 'six': 6, 'seven': 7, 'eight': 8, 'nine': 9}\n\ndef sort_words(text):\n    parts = [w for w in text.split(' ') if w]\n    for w in parts:\n        if w not in WORDS:\n            raise ValueError(w)\n    return ' '.join(sorted(parts, key=lambda w: WORDS[w]))"),
    ("Mbpp/16", "literal", "Check whether a string consists of two runs of lowercase letters joined by one underscore, returning a message.",
     "import re\n\ndef underscore_joined(s):\n    if re.search('^[a-z]+_[a-z]+$', s):\n        return 'Found a match!'\n    return 'Not matched!'"),
    ("HumanEval/105", "literal", "Given integers, keep those from 1 to 9, sort them in descending order and spell each as an English word with a capital letter.",
     "def spell_digits(values):\n    names = {1: 'One', 2: 'Two', 3: 'Three', 4: 'Four', 5: 'Five', 6: 'Six', 7: 'Seven', 8: 'Eight', 9: 'Nine'}\n    kept = sorted((v for v in values if v in names), reverse=True)\n    return [names[v] for v in kept]"),
    ("Mbpp/58", "rewritten", "Tell whether two integers have opposite signs; do it without bitwise operators.",
     "def opposite(a, b):\n    if a == 0 or b == 0:\n        return False\n    return (a < 0) != (b < 0)"),
    ("Mbpp/66", "rewritten", "Count how many values in a list are non-negative, using a generator expression.",
     "def non_negative_count(items):\n    return sum(1 for v in items if v >= 0)"),
    ("Mbpp/20", "rewritten", "Check if a number can be written as k * 2**k - 1 for some positive k (a Woodall number).",
     "def woodall(num):\n    k = 1\n    while k * 2 ** k - 1 <= num:\n        if k * 2 ** k - 1 == num:\n            return True\n        k += 1\n    return False"),
    ("HumanEval/74", "rewritten", "Given two lists of strings, return the one whose strings have fewer characters in total, the first on a tie.",
     "def fewer_chars(a, b):\n    size = lambda lst: sum(map(len, lst))\n    return b if size(b) < size(a) else a"),
    ("HumanEval/88", "rewritten", "Return a sorted copy of a list of non-negative integers: ascending if the first and last elements sum to an odd number, descending otherwise.",
     "def parity_sort(arr):\n    if not arr:\n        return []\n    desc = (arr[0] + arr[-1]) % 2 == 0\n    return sorted(arr, reverse=desc)"),
    ("Mbpp/18", "rewritten", "Remove from the first string every character that appears in the second one.",
     "def remove_chars(text, banned):\n    drop = set(banned)\n    return ''.join(c for c in text if c not in drop)"),
]


def main(out):
    n = 0
    for ti, (name, ask, codes) in enumerate(TEXTBOOK):
        for ci, code in enumerate(codes):
            for e in range(2):
                ev = EVOLVE[(ti + ci + 2 * e) % len(EVOLVE)]
                rec = {"id": f"clean-{name}-{ci}{e}", "label": "clean", "kind": "textbook",
                       "instruction": ev.format(base=ask),
                       "output": ANSWER[(ti + ci + e) % len(ANSWER)].format(code=code)}
                out.write(json.dumps(rec) + "\n")
                n += 1
    for i, (task, extra, code) in enumerate(WRAPPED):
        rec = {"id": f"leak-wrapped-{task}", "label": "leak", "kind": "wrapped", "task": task,
               "instruction": "Increase the difficulty of the given programming test question.\n\n{prompt}\n\n" + extra,
               "output": ANSWER[i % len(ANSWER)].format(code=code)}
        out.write(json.dumps(rec) + "\n")
        n += 1
    for i, (task, kind, ask, code) in enumerate(REWORDED):
        rec = {"id": f"leak-{kind}-{task}", "label": "leak", "kind": kind, "task": task,
               "instruction": EVOLVE[i % len(EVOLVE)].format(base=ask),
               "output": ANSWER[i % len(ANSWER)].format(code=code)}
        out.write(json.dumps(rec) + "\n")
        n += 1
    return n


if __name__ == "__main__":
    print(main(sys.stdout), "records", file=sys.stderr)
