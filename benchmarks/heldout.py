"""Print the held-out prompt set as TOML: the second bundled prompt of every category (`specx tune`
calibrates on the first), so the benchmark does not measure on what tuning saw.

    python benchmarks/heldout.py > benchmarks/data/heldout.toml

benchmarks/data/heldout.toml is the one saved copy: bars.sh and bars_drafters.sh bench on it (and stop if
it is stale), and every folder of benchmarks/results/ that measured held-out prompts names it."""
from specx.bench import suite


def main() -> None:
    seen: dict[str, int] = {}
    for p in suite.bundled():
        seen[p.category] = seen.get(p.category, 0) + 1
        if seen[p.category] == 2:
            text = p.text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
            print(f'[[prompt]]\ncategory = "{p.category}"\nname = "{p.name}"\ntext = """{text}"""\n')


if __name__ == "__main__":
    main()
