"""Edits that make the near-duplicates of the mixed tracks: what reposts of Chinese technical text do.

Each edit takes the text and a seeded ``random.Random`` and returns the edited text and a short
label (recorded with the document, so a miss can be traced to its edit):
- regional words: mainland terms replaced by Taiwan / Hong Kong ones (软件 -> 軟體, 程序 -> 程式,
  文件 -> 檔案 ...), every occurrence or some, as a site's conversion or an editor would;
- variant characters: 着 -> 著, 里 -> 裏, 为 -> 爲 ... (older typesetting, other input methods);
- Latin edits: a renamed command-line option, a bumped version, a moved path, an English typo;
- a changed paragraph: replaced by, or added from, another document, or deleted;
- a reordered list: consecutive option entries, shell lines or list items shuffled;
- rewrapping: other line breaks (whitespace only: the same text to the ground truth).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

REGIONAL_WORDS = [
    ("软件", "軟體"), ("软件", "软体"), ("程序", "程式"), ("网络", "網路"), ("网络", "网路"),
    ("数据", "資料"), ("数据", "资料"), ("默认", "預設"), ("默认", "缺省"), ("文件", "檔案"),
    ("文件", "档案"), ("信息", "資訊"), ("信息", "讯息"), ("服务器", "伺服器"), ("内存", "記憶體"),
    ("用户", "使用者"), ("打印", "列印"), ("支持", "支援"), ("设置", "設定"), ("硬盘", "硬碟"),
    ("字符", "字元"), ("进程", "行程"), ("线程", "執行緒"), ("接口", "介面"), ("变量", "變數"),
    ("函数", "函式"), ("屏幕", "螢幕"), ("窗口", "視窗"), ("菜单", "選單"), ("链接", "連結"),
    ("命令行", "命令列"), ("脚本", "腳本"), ("目录", "目錄"), ("对象", "物件"), ("模块", "模組"),
    ("源代码", "原始碼"), ("代码", "程式碼"), ("字节", "位元組"), ("缓存", "快取"), ("运行", "執行"),
    ("登录", "登入"), ("项目", "專案"), ("选项", "選項"), ("参数", "引數"), ("系统", "系統"),
]
VARIANT_CHARS = [
    ("着", "著"), ("里", "裏"), ("够", "夠"), ("峰", "峯"), ("群", "羣"), ("线", "綫"), ("启", "啓"),
    ("为", "爲"), ("于", "於"), ("台", "臺"), ("却", "卻"), ("即", "卽"), ("说", "説"), ("卫", "衞"),
]
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9]+(?:-[a-z0-9]+)*")
_VERSION = re.compile(r"\b\d+\.\d+(?:\.\d+)?\b")
_LATIN_WORD = re.compile(r"\b[A-Za-z]{5,}\b")
_PATHS = [("/usr/bin/", "/usr/local/bin/"), ("/etc/", "/usr/local/etc/"), ("/var/lib/", "/srv/"),
          ("/tmp/", "/var/tmp/"), ("/usr/share/", "/opt/share/")]
_LIST_ITEM = re.compile(r"^\s*(?:-{1,2}\w|[$#] |[*\u2022] |\d+\. |\|)")

Edit = Callable[[str, random.Random], tuple[str, str]]


def _replace_some(text: str, old: str, new: str, rng: random.Random, every: bool) -> str:
    if every:
        return text.replace(old, new)
    parts = text.split(old)
    out = [parts[0]]
    for part in parts[1:]:
        out += [new if rng.random() < 0.5 else old, part]
    return "".join(out)


def _substitute(table: Sequence[tuple[str, str]], most: int) -> Edit:
    def edit(text: str, rng: random.Random) -> tuple[str, str]:
        present = [(a, b) for a, b in table if a in text]
        if not present:
            return text, ""
        chosen = rng.sample(present, min(len(present), rng.randint(1, most)))
        every = rng.random() < 0.7
        for old, new in chosen:
            text = _replace_some(text, old, new, rng, every)
        return text, ",".join(f"{a}>{b}" for a, b in chosen) + ("" if every else " (some)")
    return edit


regional_words = _substitute(REGIONAL_WORDS, 4)
variant_chars = _substitute(VARIANT_CHARS, 3)


def latin_edit(text: str, rng: random.Random) -> tuple[str, str]:
    """One of: a renamed option, a bumped version, a moved path, an English typo."""
    kinds = ["option", "version", "path", "typo"]
    rng.shuffle(kinds)
    for kind in kinds:
        if kind == "option" and (options := sorted(set(_OPTION.findall(text)))):
            old = rng.choice(options)
            new = old + rng.choice(["-all", "-only", "s"]) if rng.random() < 0.5 else "--" + old[2:].replace("-", "_")
            return re.sub(rf"(?<![\w-]){re.escape(old)}(?![\w-])", new, text), f"option {old}>{new}"
        if kind == "version" and (versions := _VERSION.findall(text)):
            old = rng.choice(versions)
            head, _, last = old.rpartition(".")
            return text.replace(old, f"{head}.{int(last) + 1}"), f"version {old}"
        if kind == "path" and (paths := [(a, b) for a, b in _PATHS if a in text]):
            old, new = rng.choice(paths)
            return text.replace(old, new), f"path {old}>{new}"
        if kind == "typo" and (words := sorted(set(_LATIN_WORD.findall(text)))):
            word = rng.choice(words)
            i = rng.randrange(1, len(word) - 2)
            typo = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
            return re.sub(rf"\b{word}\b", typo, text, count=1 if rng.random() < 0.5 else 0), f"typo {word}>{typo}"
    return text, ""


def _paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def change_paragraph(donors: Sequence[str]) -> Edit:
    """Replace, insert (from another document) or delete one paragraph."""
    def edit(text: str, rng: random.Random) -> tuple[str, str]:
        paras = _paragraphs(text)
        donor = _paragraphs(rng.choice(donors)) if donors else []
        i = rng.randrange(len(paras))
        how = rng.choice(["replace", "insert", "delete"] if len(paras) > 1 and donor else ["delete"])
        if how == "delete" and len(paras) < 2:
            return text, ""
        if how == "replace":
            paras[i] = rng.choice(donor)
        elif how == "insert":
            paras.insert(i, rng.choice(donor))
        else:
            del paras[i]
        return "\n\n".join(paras), f"paragraph {how} {i}"
    return edit


def reorder_list(text: str, rng: random.Random) -> tuple[str, str]:
    """Shuffle the longest run of list-like items: paragraphs (option entries) or lines."""
    for sep in ("\n\n", "\n"):
        items = text.split(sep)
        best, start = (0, 0), None
        for i, item in enumerate([*items, ""]):
            if _LIST_ITEM.match(item):
                start = i if start is None else start
            elif start is not None:
                best, start = max(best, (i - start, start)), None
        length, first = best
        if length >= 3:
            run = items[first : first + length]
            order = list(range(length))
            while order == sorted(order):
                rng.shuffle(order)
            items[first : first + length] = [run[k] for k in order]
            return sep.join(items), f"reorder {length} items"
    return text, ""


def rewrap(text: str, rng: random.Random) -> tuple[str, str]:
    """Other line breaks inside paragraphs (the ground truth ignores whitespace)."""
    width = rng.choice([30, 50, 70])
    out = []
    for para in re.split(r"(\n\s*\n)", text):
        if para.strip() and not _LIST_ITEM.match(para):
            para = _wrap(" ".join(para.split()), width)
        out.append(para)
    return "".join(out), f"rewrap {width}"


def _wrap(flat: str, width: int) -> str:
    # break after ``width`` characters where a line may break: at a space or next to a Han
    # character, never inside a Latin word
    lines, start = [], 0
    for i in range(1, len(flat)):
        if i - start >= width and not (flat[i - 1].isascii() and flat[i].isascii() and flat[i] != " "):
            lines.append(flat[start:i].strip())
            start = i
    lines.append(flat[start:].strip())
    return "\n".join(lines)


def edit_variant(text: str, rng: random.Random, donors: Sequence[str]) -> tuple[str, list[str]]:
    """One to four edits of the kinds above, chosen at random (weights: common edits first)."""
    edits: list[tuple[Edit, float]] = [(regional_words, 3), (variant_chars, 2), (latin_edit, 2),
                                       (change_paragraph(donors), 2), (reorder_list, 1.5), (rewrap, 1)]
    labels: list[str] = []
    wanted = rng.choice([1, 1, 2, 2, 3, 4])
    for _ in range(20):  # until the text has that many edits, one at least not whitespace only
        if len(labels) >= wanted and any(not label.startswith("rewrap") for label in labels):
            break
        edit = rng.choices([e for e, _ in edits], weights=[w for _, w in edits])[0]
        text, label = edit(text, rng)
        if label:
            labels.append(label)
    return text, labels
