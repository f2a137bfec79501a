"""Two runs of 12_predict answer alike: the same classes in the same order on every line, and
probabilities equal to the printed 0.1% (a last digit may round the other way).

    same_answers.py ACCRUE.txt ONNX.txt [LINES]    (LINES: how many lines each must have)
"""
import re
import sys

a, b = (open(p).read().splitlines() for p in sys.argv[1:3])
assert len(a) == len(b), (len(a), len(b))
if len(sys.argv) > 3:
    assert len(a) == int(sys.argv[3]), (len(a), sys.argv[3])


def parts(line):
    return re.findall(r"[:,] (.+?) \(([0-9.]+)%\)", line)


for x, y in zip(a, b):
    px, py = parts(x), parts(y)
    assert px, f"no classes in:\n{x}"
    assert [n for n, _ in px] == [n for n, _ in py], f"different classes:\n{x}\n{y}"
    assert all(abs(float(p) - float(q)) <= 0.1 for (_, p), (_, q) in zip(px, py)), f"different probabilities:\n{x}\n{y}"
print(f"{sys.argv[1]} and {sys.argv[2]}: {len(a)} lines, the same classes and probabilities")
