#!/usr/bin/env sh
# Prints the path of a working interpreter for NAME (python3, python3.12, a path...): NAME
# itself when it runs, else a pyenv installation of that version (`python3.12` is not on
# PATH when pyenv's global version is another one). Exits 1 when there is none.
name="$1"
if path=$(command -v "$name" 2>/dev/null) && "$path" -c 'import sys' >/dev/null 2>&1; then
  "$path" -c 'import sys; print(sys.executable)'
  exit 0
fi
version=$(printf '%s' "$name" | sed -n 's/^python\([0-9][0-9]*\.[0-9][0-9]*\)$/\1/p')
if [ -n "$version" ]; then
  root=${PYENV_ROOT:-$HOME/.pyenv}
  command -v pyenv >/dev/null 2>&1 && root=$(pyenv root)
  for candidate in $(ls -d "$root"/versions/"$version".*/bin/"$name" 2>/dev/null | sort -V -r); do
    if "$candidate" -c 'import sys' >/dev/null 2>&1; then
      echo "$candidate"
      exit 0
    fi
  done
fi
echo "no working interpreter for '$name' (on PATH or under pyenv)" >&2
exit 1
