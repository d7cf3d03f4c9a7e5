#!/usr/bin/env bash
# What the documentation shows must work as shown (#16, docs that disagree
# with the code): every file under examples/ goes through the parser that
# reads it (ebbd --check, ebb submit --check, ebb schedule add --check, a
# backtest for a workload, Python's compiler for a script), the sample
# sections commented out in examples/ebb.yaml too, a script an example
# runs is shipped, and every command the README and docs/*.md show is one
# ebb has, with flags its --help names.
. "$(dirname "$0")/lib.sh"

ROOT=${EBB_SOURCE_ROOT:?EBB_SOURCE_ROOT is set by meson}
cd "$ROOT" || exit 1

# ---- every file under examples/ ---------------------------------------

n_files=0
while IFS= read -r f; do
    n_files=$((n_files + 1))
    case "$f" in
    examples/ebb.yaml)
        expect_exit 0 "$f: ebbd --check" "$EBBD" --check --config "$f"
        check "$f: ok" contains "$OUT" "$f: ok" ;;
    examples/nightly.yaml)
        expect_exit 0 "$f: ebb schedule add --check" "$EBB" schedule add --check "$f"
        check "$f: ok" contains "$OUT" "$f: ok" ;;
    *.yaml)
        if grep -q '^jobs:' "$f"; then
            expect_exit 0 "$f: a workload, through ebb backtest" "$EBB" backtest \
                --prices data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv \
                --availability data/availability_aws_2020-03.csv --align-availability \
                --catalog data/catalog.csv --workload "$f" --json
        else
            expect_exit 0 "$f: ebb submit --check" "$EBB" submit --check "$f"
            check "$f: ok" contains "$OUT" "$f: ok"
        fi ;;
    *.py)
        check "$f: compiles" python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$f" ;;
    *)
        not_ok "$f: a file the examples test knows how to check" "add a case for it" ;;
    esac
done < <(find examples -type f | sort)
check "examples/ holds files" test "$n_files" -ge 6

# The Python script an example runs is shipped, so that copying the
# example works (examples/nightly.yaml once ran an eval.py that did not
# exist, failing every night). These examples only show keys: they run
# the reader's own training code, or are workloads a backtest simulates.
ILLUSTRATIVE="examples/jobs/ddp-2node.yaml examples/jobs/train-resnet.yaml examples/jobs/train-shell.yaml
examples/jobs/workload-small.yaml"
python3 - $ILLUSTRATIVE >"$TMP/scripts" <<'PY'
import glob, re, sys
for f in sorted(glob.glob("examples/**/*.yaml", recursive=True)):
    if f in sys.argv[1:]:
        continue
    for m in re.finditer(r"run: \[([^\]]*)\]", open(f).read()):
        for word in (w.strip().strip('"') for w in m.group(1).split(",")):
            if word.endswith(".py"):
                print(f, word)
PY
check "the runnable examples run scripts" test "$(wc -l <"$TMP/scripts")" -ge 2
while read -r f script; do
    check "$f runs $script, which is shipped" test -f "$script"
done <"$TMP/scripts"

# The samples commented out under "# For example:" in examples/ebb.yaml,
# each in place of the value above it, make one configuration ebbd
# accepts (paths of an installed ebb point at this checkout's data/).
python3 - examples/ebb.yaml "$ROOT/data" >"$TMP/samples.yaml" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
out, i = [], 0
while i < len(lines):
    line = lines[i]
    if line == "# For example:":
        # Drop the key the sample replaces ("providers: {}" above it).
        while out and (out[-1] == "" or out[-1].startswith("#")):
            out.pop()
        if out and re.match(r"^[a-z_]+: \{\}$", out[-1]):
            out.pop()
        i += 1
        while i < len(lines) and lines[i].startswith("#"):
            text = lines[i][2:] if lines[i].startswith("# ") else ""
            out.append(text.replace("/usr/share/ebb", sys.argv[2]))
            i += 1
        continue
    out.append(line)
    i += 1
print("\n".join(out))
PY
check "samples found" test "$(grep -c '^[a-z_]*:$' "$TMP/samples.yaml")" -ge 5
# (The stores' credentials come from the environment: a store without
# them fails even --check, so the check is given some.)
expect_exit 0 "the commented samples of examples/ebb.yaml are accepted" \
    env AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=example \
    ALIBABA_CLOUD_ACCESS_KEY_ID=LTAIEXAMPLE ALIBABA_CLOUD_ACCESS_KEY_SECRET=example \
    "$EBBD" --check --config "$TMP/samples.yaml"

# ---- every documented command -----------------------------------------

# Commands in code blocks (a block with "$ " prompts: only those lines)
# and in the README's command table, continuation lines joined: "ebb CMD
# [flags]", "ebbd [flags]" or "ebb-agent [flags]", each with the --flags
# it shows.
python3 - README.md docs/*.md >"$TMP/commands" <<'PY'
import re, sys
def emit(src, text):
    text = re.sub(r"^(\$ )?(\S+=\S+ )*(build/src/)?", "", text.strip())
    words = text.split()
    if not words or words[0] not in ("ebb", "ebbd", "ebb-agent"):
        return
    prog, rest = words[0], words[1:]
    while rest and rest[0] == "--state-dir":
        rest = rest[2:]
    cmd = "" if prog != "ebb" or not rest or rest[0].startswith("-") else rest[0]
    flags = sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", " ".join(words))))
    print("%s\t%s\t%s\t%s" % (src, prog, cmd, " ".join(flags)))
for path in sys.argv[1:]:
    lines = open(path).read().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            block = lines[i + 1:j]
            prompts = any(l.startswith("$ ") for l in block)
            k = 0
            while k < len(block):
                l = block[k]
                while l.endswith("\\") and k + 1 < len(block):
                    k += 1
                    l = l[:-1] + " " + block[k]
                # Indented lines go on the command above (usage blocks).
                while k + 1 < len(block) and block[k + 1].startswith(" ") and not prompts:
                    k += 1
                    l += " " + block[k]
                if not prompts or l.startswith("$ "):
                    emit("%s:%d" % (path, i + 2 + k), l.split(" #")[0])
                k += 1
            i = j + 1
            continue
        if path == "README.md" and lines[i].startswith("| `ebb"):
            cell = re.split(r"(?<!\\)\|", lines[i])[1]
            for code in re.findall(r"`(ebb[^`]*)`", cell.replace("\\|", "|")):
                emit("%s:%d" % (path, i + 1), code)
        i += 1
PY
check "documented commands found" test "$(wc -l <"$TMP/commands")" -ge 30
while IFS=$'\t' read -r src prog cmd flags; do
    if [ "$prog" = ebbd ]; then
        help=$("$EBBD" --help 2>&1); rc=$?
    elif [ "$prog" = ebb-agent ]; then
        help=$("$EBB_AGENT" --help 2>&1); rc=$?
    else
        help=$("$EBB" $cmd --help 2>&1); rc=$?
    fi
    if [ "$rc" -ne 0 ]; then
        not_ok "$src: $prog $cmd is a command" "$prog $cmd --help exits $rc: $help"
        continue
    fi
    missing=""
    for f in $flags; do
        [ "$f" = --help ] && continue
        contains "$help" "$f" || missing="$missing $f"
    done
    if [ -z "$missing" ]; then ok "$src: $prog $cmd${flags:+ $flags}"
    else not_ok "$src: $prog $cmd: flags its --help does not name:$missing"; fi
done <"$TMP/commands"

finish
