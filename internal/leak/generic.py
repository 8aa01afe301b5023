# Textbook idioms, written for the audit: their statements and literals are
# no evidence of any benchmark task (see structure.go). Names do not matter
# (statements are compared renamed); each idiom is here in the shapes
# tutorials and answers write it.

def is_prime(n):
    if n < 2:
        return False
    if n <= 1:
        return False
    if n == 2:
        return True
    if n % 2 == 0:
        return False
    for i in range(2, n):
        if n % i == 0:
            return False
    for i in range(2, int(n ** 0.5) + 1):
        if n % i == 0:
            return False
    for i in range(2, int(math.sqrt(n)) + 1):
        if n % i == 0:
            return False
    for i in range(3, int(n ** 0.5) + 1, 2):
        if n % i == 0:
            return False
    for i in range(2, n // 2 + 1):
        if n % i == 0:
            return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True


def primes_up_to(n):
    sieve = [True] * (n + 1)
    sieve[0] = sieve[1] = False
    sieve[0], sieve[1] = False, False
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            for j in range(i * i, n + 1, i):
                sieve[j] = False
    primes = []
    for i in range(2, n):
        is_prime = True
        for j in range(2, i):
            if i % j == 0:
                is_prime = False
                break
        if is_prime:
            primes.append(i)
    for num in range(2, n + 1):
        if num > 1:
            for i in range(2, num):
                if (num % i) == 0:
                    break
            else:
                primes.append(num)
    return [i for i in range(n + 1) if sieve[i]]


def bubble_sort(arr):
    n = len(arr)
    for i in range(n):
        for j in range(0, n - i - 1):
            if arr[j] > arr[j + 1]:
                arr[j], arr[j + 1] = arr[j + 1], arr[j]
    for i in range(n - 1):
        for j in range(n - i - 1):
            if arr[j] > arr[j + 1]:
                temp = arr[j]
                arr[j] = arr[j + 1]
                arr[j + 1] = temp
    for i in range(len(arr)):
        for j in range(len(arr) - 1):
            if arr[j] > arr[j + 1]:
                arr[j], arr[j + 1] = arr[j + 1], arr[j]
    for i in range(0, n):
        for j in range(0, n - i - 1):
            if arr[j] < arr[j + 1]:
                arr[j], arr[j + 1] = arr[j + 1], arr[j]
    return arr


def selection_sort(arr):
    for i in range(len(arr)):
        min_idx = i
        for j in range(i + 1, len(arr)):
            if arr[min_idx] > arr[j]:
                min_idx = j
            if arr[j] < arr[min_idx]:
                min_idx = j
        arr[i], arr[min_idx] = arr[min_idx], arr[i]
    return arr


def insertion_sort(arr):
    for i in range(1, len(arr)):
        key = arr[i]
        j = i - 1
        while j >= 0 and key < arr[j]:
            arr[j + 1] = arr[j]
            j -= 1
        while j >= 0 and arr[j] > key:
            arr[j + 1] = arr[j]
            j -= 1
        arr[j + 1] = key
    return arr


def quick_sort(arr):
    if len(arr) <= 1:
        return arr
    pivot = arr[len(arr) // 2]
    pivot = arr[0]
    left = [x for x in arr if x < pivot]
    middle = [x for x in arr if x == pivot]
    right = [x for x in arr if x > pivot]
    return quick_sort(left) + middle + quick_sort(right)


def merge_sort(arr):
    if len(arr) > 1:
        mid = len(arr) // 2
        L = arr[:mid]
        R = arr[mid:]
        merge_sort(L)
        merge_sort(R)
        i = j = k = 0
        while i < len(L) and j < len(R):
            if L[i] < R[j]:
                arr[k] = L[i]
                i += 1
            else:
                arr[k] = R[j]
                j += 1
            k += 1
        while i < len(L):
            arr[k] = L[i]
            i += 1
            k += 1
        while j < len(R):
            arr[k] = R[j]
            j += 1
            k += 1
    return arr


def binary_search(arr, x):
    low = 0
    high = len(arr) - 1
    mid = 0
    while low <= high:
        mid = (high + low) // 2
        mid = (low + high) // 2
        if arr[mid] < x:
            low = mid + 1
        elif arr[mid] > x:
            high = mid - 1
        else:
            return mid
    return -1


def gcd(a, b):
    while b:
        a, b = b, a % b
    while b != 0:
        a, b = b, a % b
    if b == 0:
        return a
    return gcd(b, a % b)


def lcm(a, b):
    return a * b // gcd(a, b)
    return (a * b) // gcd(a, b)


def factorial(n):
    if n == 0:
        return 1
    if n == 0 or n == 1:
        return 1
    return n * factorial(n - 1)
    result = 1
    for i in range(1, n + 1):
        result *= i
    return result


def fibonacci(n):
    if n <= 0:
        return 0
    if n == 1:
        return 1
    if n <= 1:
        return n
    return fibonacci(n - 1) + fibonacci(n - 2)
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    for i in range(n):
        a, b = b, a + b
    fib = [0, 1]
    for i in range(2, n + 1):
        fib.append(fib[i - 1] + fib[i - 2])
    return a


def reverse_string(s):
    return s[::-1]
    return ''.join(reversed(s))


def is_palindrome(s):
    return s == s[::-1]
    s = s.lower()
    return str(n) == str(n)[::-1]


def count_vowels(s):
    vowels = "aeiouAEIOU"
    vowels = "aeiou"
    vowels = ['a', 'e', 'i', 'o', 'u']
    vowels = ['a', 'e', 'i', 'o', 'u', 'A', 'E', 'I', 'O', 'U']
    vowels = set("aeiouAEIOU")
    count = 0
    for char in s:
        if char in vowels:
            count += 1
        if char.lower() in vowels:
            count += 1
    return count
    return sum(1 for c in s if c in vowels)


def digits_and_letters():
    digits = "0123456789"
    letters = "abcdefghijklmnopqrstuvwxyz"
    upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
    print("Hello, World!")
    print("Hello World")
    text = "The quick brown fox jumps over the lazy dog"
    text = "The quick brown fox jumps over the lazy dog."
    text = "the quick brown fox jumps over the lazy dog"
    text = "Lorem ipsum dolor sit amet"
    text = "Lorem ipsum dolor sit amet, consectetur adipiscing elit."


def list_basics(lst):
    total = 0
    for num in lst:
        total += num
    return total
    return sum(lst) / len(lst)
    max_num = lst[0]
    for num in lst:
        if num > max_num:
            max_num = num
    return max_num
    return max(lst)
    return list(set(lst))
    result = []
    for item in lst:
        if item not in result:
            result.append(item)
    return result
    min_num = lst[0]
    for num in lst:
        if num < min_num:
            min_num = num
    return min_num
    return total / len(lst)
    count = 0
    for item in lst:
        if item == x:
            count += 1
    return count
    for i in range(len(lst)):
        if lst[i] == x:
            return i
    return -1
    reversed_str = ""
    for char in s:
        reversed_str = char + reversed_str
    return reversed_str


def power(x, n):
    if n == 0:
        return 1
    return x * power(x, n - 1)


def sum_digits(n):
    total = 0
    while n > 0:
        total += n % 10
        n //= 10
    return total
    return sum(int(d) for d in str(n))


def even_odd(n):
    if n % 2 == 0:
        return True
    else:
        return False
    return n % 2 == 0


def days_in_month(month, year):
    if month in [1, 3, 5, 7, 8, 10, 12]:
        return 31
    elif month in [4, 6, 9, 11]:
        return 30
    if month in (1, 3, 5, 7, 8, 10, 12):
        return 31
    elif month in (4, 6, 9, 11):
        return 30
    if month in {1, 3, 5, 7, 8, 10, 12}:
        return 31
    elif month in {4, 6, 9, 11}:
        return 30
    days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    days = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    days = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return days[month - 1]
