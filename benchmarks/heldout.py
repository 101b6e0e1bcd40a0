"""Print the held-out prompt set as TOML: the second bundled prompt of every category (`specx tune`
calibrates on the first), so the benchmark does not measure on what tuning saw."""
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
