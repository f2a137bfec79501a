#!/usr/bin/env python3
"""Compiles every C++ block of the given Markdown files, so that the documentation cannot drift
from the API (ctest's test_doc_snippets).

    compile_snippets.py COMPILER INCLUDE_DIR WORK_DIR (FILE.md | FOLDER)...

A folder stands for every .md file under it.

A ```cpp block is code at namespace scope: classes, functions, a whole program with its main. A
```cpp fragment block is statements, compiled in a function where a program's usual names are in
scope (model, train, test, x, y: see CONTEXT). All blocks go into one file, each in a namespace of
its own, with #line directives: a compiler error names the Markdown file and its line. #include
lines are gathered at the top. Exits 1 when a block does not compile, or when a file has a block
marked c++ or C++ (which this would not see)."""
import os
import re
import subprocess
import sys

CONTEXT = """\
#include <accrue/accrue.hpp>
using namespace accrue;
// What a fragment may use without declaring it.
struct SnippetContext {
  Sequential model;
  Dataset train, test;
  Tensor x, y;
};
"""


def blocks(path):
    """(line of the block's first code line, info string, code) of each fenced block."""
    out, fence, info, start, code = [], None, "", 0, []
    for number, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        stripped = line.strip()
        if fence is None:
            match = re.match(r"^(```+)\s*(.*)$", stripped)
            if match:
                fence, info, start, code = match.group(1), match.group(2).strip(), number + 1, []
        elif stripped == fence:
            out.append((start, info, code))
            fence = None
        else:
            code.append(line)
    return out


def main():
    compiler, include, work = sys.argv[1], sys.argv[2], sys.argv[3]
    files = []
    for given in sys.argv[4:]:
        if os.path.isdir(given):
            files += sorted(os.path.join(d, f) for d, _, names in os.walk(given) for f in names if f.endswith(".md"))
        else:
            files.append(given)
    includes, parts, counts, problems = set(), [], {}, []
    for path in files:
        counts[path] = 0
        for start, info, code in blocks(path):
            language = info.split()[0] if info else ""
            if language in ("c++", "C++", "cxx", "cc"):
                problems.append(f"{path}:{start - 1}: a C++ block marked {language}: mark it cpp, so that it is compiled")
                continue
            if language != "cpp":
                continue
            counts[path] += 1
            n = len(parts)
            kept = []
            for offset, line in enumerate(code):
                if line.strip().startswith("#include"):
                    includes.add(line.strip())
                    kept.append("")  # keeps the lines in step with the file's
                else:
                    kept.append(line)
            body = "\n".join(kept)
            if "fragment" in info.split()[1:]:
                text = (f"namespace snippet_{n} {{\n[[maybe_unused]] void run(SnippetContext& c) {{\n"
                        f"  [[maybe_unused]] auto& [model, train, test, x, y] = c;\n  {{\n"
                        f'#line {start} "{path}"\n{body}\n  }}\n}}\n}}  // namespace snippet_{n}\n')
            else:
                text = f'namespace snippet_{n} {{\n#line {start} "{path}"\n{body}\n}}  // namespace snippet_{n}\n'
            parts.append(text)
    for p in problems:
        print(p)
    source = CONTEXT.replace("#include <accrue/accrue.hpp>\n", "".join(sorted(i + "\n" for i in includes | {"#include <accrue/accrue.hpp>"})))
    source += "\n" + "\n".join(parts) + "\nint main() {}\n"
    out = f"{work}/doc_snippets.cpp"
    with open(out, "w", encoding="utf-8") as f:
        f.write(source)
    for path, n in counts.items():
        print(f"{path}: {n} C++ block{'s' if n != 1 else ''}")
    print(f"compiling {len(parts)} blocks ({out})")
    result = subprocess.run([compiler, "-std=c++20", "-fsyntax-only", "-Wall", "-Wno-unused", "-Wno-return-type", "-I", include, out])
    if result.returncode != 0 or problems:
        print("FAILED: a block of the documentation does not compile (the errors above name its file and line)")
        return 1
    print(f"ok: all {len(parts)} C++ blocks compile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
