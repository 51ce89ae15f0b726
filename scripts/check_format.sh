#!/usr/bin/env bash
# Checks that the C++ sources are formatted with the repository's .clang-format (issue 28,
# item 7), using clang-format 14 as Debian 12 ships it (apt-get install clang-format-14): a
# different major version formats some constructs differently, so another version is refused
# rather than reporting files that are fine. Lists every unformatted file and exits 1; exits 0
# when all are formatted. It changes nothing; to fix a file: clang-format-14 -i FILE (or, for
# only the lines a change touches, git clang-format).
# .ci/run runs it before building.
#
# Usage: scripts/check_format.sh [FILE...]   (default: every tracked *.cpp, *.h under the dirs
# below; CLANG_FORMAT=path picks the binary.)
set -euo pipefail
cd "$(dirname "$0")/.."

CF=${CLANG_FORMAT:-}
if [[ -z "$CF" ]]; then
  for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null 2>&1; then CF=$c; break; fi
  done
fi
if [[ -z "$CF" ]]; then
  echo "check_format: clang-format 14 not found (apt-get install clang-format-14)" >&2
  exit 2
fi
version=$("$CF" --version)
if [[ ! "$version" =~ version\ 14\. ]]; then
  echo "check_format: $CF is not clang-format 14 ($version); set CLANG_FORMAT to a clang-format 14" >&2
  exit 2
fi

if [[ $# -gt 0 ]]; then
  files=("$@")
else
  # The project's own C++ (vector_ops.def is an X-macro table laid out by hand: not checked).
  # Not examples/: the example kernels are the DSL's documentation, laid out as a kernel author
  # writes them; clang-format breaks `T::Kernel(n, [&] { ... }, {.threads = 2})` (a lambda that
  # is not the last argument) into an extra indented level on every line, which adds 10-20 % of
  # lines to the developer kernels (tests/examples/developer_size_test.cpp counts them) and makes
  # them read worse.
  mapfile -t files < <(git ls-files -- 'src/*.cpp' 'src/*.h' 'cann_ops_tilelang/*.cpp' 'cann_ops_tilelang/*.h' 'include/*.h' 'tools/*.cpp' 'tools/*.h' \
    'tests/*.cpp' 'tests/*.h' 'bench/*.cpp' 'bench/*.h' \
    'fuzz/*.cpp' 'fuzz/*.h' 'python/*.cpp' 'python/*.h')
fi

bad=()
for f in "${files[@]}"; do
  # --dry-run -Werror: exit non-zero when formatting would change the file (clang-format >= 10).
  if ! "$CF" --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "check_format: ${#bad[@]} of ${#files[@]} files not formatted with .clang-format ($CF):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: all ${#files[@]} files formatted"
