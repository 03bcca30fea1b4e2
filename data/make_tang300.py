"""How src/redthread/data/texts/tang300.txt was made from the chinese-poetry package (npm).

    cd /tmp && npm pack chinese-poetry@2.0.1 && tar xzf chinese-poetry-2.0.1.tgz
    pip install opencc==1.4.2          # OpenCC, Apache-2.0: traditional -> simplified characters
    python data/make_tang300.py /tmp/package/dist/mengxue/tangshisanbaishou.json > tang300.txt

The anthology (唐詩三百首, 320 poems, in traditional characters in the package) is written out one
poem per block: the title, the poet, the poem's lines, a blank line. The database groups the poems
by form (五言绝句 29, 七言绝句 51, 五言律诗 80, 七言律诗 53, 五言古诗 35, 七言古诗 28, 乐府 44), so
a corpus's last tenth, the validation split of every single-file corpus, would be all 乐府: a shift
of genre, not a held-out sample. The poems are therefore written in the order `random.Random(SEED)`
shuffles them into, as data/tang.py does for the Complete Tang Poems, and the validation split is a
random tenth of the poems (only the poem across the cut is divided). The editors' notes in brackets
("(明年 一作：年年)": variant readings) are dropped, ASCII punctuation becomes full-width, and
OpenCC's "t2s" converts the characters to simplified ones.
"""

import json
import random
import re
import sys

import opencc

NOTE = re.compile(r"\s*[（(][^）)]*[）)]")  # an editor's note: (明年 一作：年年)
SEED = 0  # the order of the poems in the file
FULL_WIDTH = str.maketrans({",": "，", "!": "！", "?": "？", ":": "：", ";": "；"})


def clean(text: str) -> list[str]:
    """The text's lines without notes (a note may run over a line break), spaces or empty lines."""
    text = NOTE.sub("", text).translate(FULL_WIDTH).replace(" ", "")
    return [line.strip() for line in text.split("\n") if line.strip()]


def main(path: str) -> None:
    anthology = json.load(open(path, encoding="utf-8"))
    to_simplified = opencc.OpenCC("t2s")
    blocks = []
    for section in anthology["content"]:
        for poem in section["content"]:
            lines = clean(poem["chapter"]) + clean(poem["author"]) + clean("\n".join(poem["paragraphs"]))
            blocks.append("\n".join(lines))
    random.Random(SEED).shuffle(blocks)
    sys.stdout.write(to_simplified.convert("\n\n".join(blocks) + "\n"))


if __name__ == "__main__":
    main(sys.argv[1])
