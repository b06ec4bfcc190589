"""memory-diff: propose additions to an agent memory file as a patch a person reviews.

Reads AI coding-agent session transcripts (FORMATS: Claude Code, Codex, Gemini, Copilot,
OpenCode, Aider, SpecStory, Cline, message lists) and the notes agents saved to their own
memory, picks the few sentences that carry a decision, a constraint, a root cause, a
preference or a gotcha, and prints a unified diff that appends them as `- <sentence>` bullets
to the memory file, for a person to review and apply with `git apply`. `build --baseline`
records what was read so far as reviewed, never to be proposed; `lint` runs the same safety
gates over an existing memory file, and names stale bullets.

The file reads top to bottom as the data flows, one stage a line:
1. Rules a reviewer argues with, each with its reason (SIGNAL, NOISE, SCORE, gates); compiled.
2. Records: Message, MemoryWrite, Candidate, Options, UserError.
3. Readers, a format each: visible prose and the session's own memory writes; notes; sniffing.
4. Sentences: split_sentences, normalize.
5. Gates: secrets, personal data, invisible and injected text, structure.
6. The verdict on each sentence: judge, memory_request, score.
7. One transcript: process_file (judge_message, pull_in), process_notes; its key.
8. Across transcripts: likeness (near-duplicates, contradictions), findings, select.
9. What the reviewer is told: review flags, the session's own writes, the preamble.
10. The patch: where the bullets go, git's headers, render_file_patch.
11. The I/O edge: repository, cache, process_all, memory and seen files, discovery, config, lint.
12. The command line: flags, settings, run_build, main.

Promises:
- It never writes the memory file; the only files it writes are its cache's, in
  memory-diff/ inside the repository's git directory.
- A patch only adds lines (but git re-emits a last line that has no newline, with one).
- Keyword and rule heuristics, no model: the same inputs always give the same bytes.
- Stdout carries only the product (the patch, the JSON, the explanation or the findings).

Exit status:
  0  success, whether or not anything is proposed (lint: nothing but notes found)
  1  with --exit-code, something is proposed (lint: a finding other than a note)
  2  usage or input error (a file named outright that is no transcript; a failed write of
     the output): one line on stderr, `memory-diff: error: PATH[:LINE]: reason`
"""
from __future__ import annotations

import argparse
import base64
import binascii
import bisect
import contextlib
import datetime
import functools
import hashlib
import heapq
import html
import itertools
import json
import marshal
import math
import os
import re
import stat
import string
import sys
import tempfile
import time
import unicodedata
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple, NoReturn

__version__ = "0.1.0"

PROG = "memory-diff"


class Lazy:
    """A regular expression compiled on first use (most runs need few), then kept."""

    METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")

    def __init__(self, pattern: Any, flags: int = 0) -> None:
        self.pattern, self._flags = pattern, flags

    def __getattr__(self, name: str) -> Any:  # only for what the instance lacks
        if name not in self.METHODS:
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self._flags)
        self.__dict__.update({method: getattr(compiled, method) for method in self.METHODS})
        return getattr(compiled, name)


# == Constants a reviewer will want to argue with. Each carries the reason for its value. ==

# SIGNAL: a sentence is a candidate only when one of these phrases occurs in it (ASCII: a word).
SIGNAL_RULES: tuple[tuple[str, str], ...] = (
    # What was chosen, and ideally why: "we decided to", "chose X over Y", "instead of". Not the
    # bare verb "choose" or 选择: mostly someone picking in a UI or a menu, not a team's decision.
    ("decision", "decided|decide to|decision|chose|chosen|opted|instead of|rather than|"
                 "in favour of|in favor of"),
    ("decision", "决定|选择了|选用|改用|采用|约定"),
    # Rules and conventions: "always X", "never Y", "X must Y", "don't".
    ("constraint", "must|mustn't|never|always|do not|don't|should|shouldn't|avoid|make sure|"
                   "ensure|required|only ever|not allowed|forbidden"),
    ("constraint", "必须|不要|不能|禁止|务必|一定要|总是|永远|不得|不必|不需要|只能|需要确保"),
    # A bug's mechanism stated concretely.
    ("root-cause", "root cause|caused by|because|the issue is|the issue was|the problem is|"
                   "the problem was|the fix is|the fix was"),
    ("root-cause", "根本原因|根因|原因是|因为|由于|导致|修复"),
    # How the user wants things done.
    ("preference", "prefer|prefers|preferred|preference|i'd rather"),
    ("preference", "偏好|更喜欢|倾向于|喜欢用|希望"),
    # Facts that bite again: a limit ("X only reads ..."), a guarantee, a contrary fact.
    ("gotcha", "keep in mind|note that|by design|gotcha|best-effort|best effort|only reads|only handles|only works|"
               "only runs|only supports|only finds|only queries|only checks|only returns|only fires|only applies|"
               "only looks|only tracks|only reflects|even though"),
    ("gotcha", "注意|陷阱|故意|尽力而为|只读取|只处理|只支持|只查找|只检查|只返回|只适用|只跟踪|仅读取|仅处理|仅支持|"
               "仅查找|仅检查|仅返回|仅适用|即使"),
)
# Left out ("the bug is", "due to", "went with", "intentionally"...): mostly on drops.

# NOISE: sentences with a marker that are not memory (lower-cased, list marker and emphasis off).
NOISE_RULES: tuple[tuple[str, str], ...] = (
    # First-person narration and plans: "Now let me check...", "I'll update the test".
    ("narration", r"^(?:(?:now|next|first|then|ok(?:ay)?|so|great|good|perfect)[,!]?\s+)*"
                  r"(?:let me|let's|i'll|i will|i'm going to|i am going to|i need to|"
                  r"i should|i can|we'll|we will now|we need to (?:check|look|see|find)|"
                  r"going to)\b"),
    ("narration", r"^(?:让我|我来|我将|我会|我先|现在|接下来|好的|首先|然后)"),
    # A step of a plan is a plan: "Step 4: Simplify PrepareCommitMsg".
    ("plan-step", r"^(?:step|phase|stage|task) \d+\b|^第\s*\d+\s*步"),
    # Questions ask; memory states. A Chinese one may end in its "why" or "how" without a mark.
    ("question", r"[?？]\s*$|(?:为什么|怎么)[^，,。]{0,8}$"),
    # Pleasantries and status reports: "Great, all tests pass because...".
    ("status", r"^(?:all (?:\d+ )?(?:tests?|checks?)|tests? (?:now )?pass|done\b|fixed\b|"
               r"thanks?|thank you|you're right|you are right|perfect|great|excellent|"
               r"sounds good|got it)"),
    # A sentence that leans on context it does not carry ("This repo ..." and 这个项目 are kept,
    # and so is a rule said of no one: "There must be no ...", "There should always be ...";
    # "There must be a bug" guesses).
    ("context", r"^(?:this(?! (?:repo|repository|project|codebase|monorepo)\b)|that|these|those|it|its|"
                r"they|both|here|there(?! (?:must|should|shall) (?:not|never|always|be no)\b| "
                r"(?:mustn't|shouldn't|cannot|can't)\b)|"
                r"the above|the following|above|below)\b"
                r"|^(?:这(?!个?(?:项目|仓库|代码库))|那|它|以上|上面|下面)"),
    # ... and one opening with a connective pointing back ("Since that is ...") or an ellipsis.
    ("context", r"^(?:(?:since|because|so|and|but|which|as) (?:this|that|it|these|those|they)\b|\.\.\.|…)"),
    # "Just to be sure, ..." asks even without "?"; "To be sure X, always check ..." instructs.
    ("question", r"^(?:(?:just )?(?:to be sure|to double[- ]check)\s*[,，]|just (?:to confirm|checking)\s*[,，:]|"
                 r"correct me if\b|if i understand (?:correctly|right)\b|我?[想再]?确认一下\s*[，,：:]|"
                 r"如果我没(?:理解|记)错)"),
    # Pasted tool output: a `line:col`, a log level, a stack frame, or columns (two spaces between
    # words, not after `.` or `:` where a typist may put them); typos too.
    ("pasted-output", r"\b\d+:\d+(?::\d+)?\s{2,}|[\w)\]]:\d+:\d+\b|"
                      r"^(?:e|w|err|error|warn|warning|fatal|info|debug|trace|critical|panic)(?::|\s*\[\w)|"
                      r"^at [\w.$<>]+ ?\(|\bfile \"[^\"]+\", line \d+|traceback \(most recent call last\)|"
                      r"[^\s.!?:;,。！？：；，] {2,}\S"),
    # ... or an exception's message (`ValueError: ...`, `(Ecto.QueryError) ...`, a browser's
    # `Uncaught TypeError: ...`) or its raise, or a diagnostic opening with its place (`a.ts:23`).
    ("pasted-output", r"^\(?[\w.]*(?:error|exception|warning)(?::|\)\s)|"
                      r"^(?:raise|throw) (?:new )?[\w.]+\(|"
                      r"\b(?:uncaught|unhandled) \w*(?:error|exception):|"
                      r"^[\w./@~-]*\w\.[a-z]\w{0,5}:\d+\b"),
    # ... or a compiler's note under its diagnostic (rustc's `= help: ...`), or code: an
    # assertion, a line opening with assignments (`alpha=20, beta=0 — must escape`).
    ("pasted-output", r"^= (?:note|help|warning|error)\b|^assert\s|"
                      r"^[a-z_]\w*\s?=\s?[^=\s,;]+[,;]\s*[a-z_]\w*\s?=(?!=)"),
    # A limit on this task's edits ("Do not modify any Python code", "don't change anything, just
    # tell me"): the scope of one request, not a rule of the project.
    ("task-scope", r"^(?:please )?(?:do not|don't|dont)\s+(?:modify|change|touch|edit|alter)\b\s*"
                   r"(?:anything|any\b|(?:the )?code\b|existing\b|"  # ... or, after a comma:
                   r"[^.;]*?[,;—–]\s*(?:(?:i|we) )?(?:just|only)\b)"),
    # The answer's caveat about itself ("a simplified example", "may need adjustments",
    # "a placeholder for the real call"): about the code just shown, not the project.
    ("hedge", r"\b(?:simplified (?:example|version|implementation)"
              r"|(?:may|might) need (?:some )?(?:adjust|tweak)"
              r"|uses? a placeholder|placeholder for the (?:actual|real)"
              r"|ejemplo simplificado|puede necesitar ajustes"
              r"|exemplo simplificado|pode precisar de ajustes"
              r"|exemple simplifié|vereinfachtes beispiel)"
              r"|简化(?:的)?(?:示例|例子|版本)|可能需要(?:根据[^，。]*)?(?:调整|修改)"),
    # A template's blank ("Root Cause: [identified cause]"): no link, checkbox or citation.
    ("placeholder", r"\[[a-z]+(?:[ /,-]+[a-z]+){2,}(?:\.\.\.|…)?\](?![(\[])"),
    # A clause cut from its sentence ("to reflect the new storage"); "to X, ..." is a whole one.
    ("fragment", r"^(?:is|are|was|were) that\b|^(?:of|than|whereas|which|such as|e\.g\.|i\.e\.)\s|"
                 r"^(?:to|for|if|with|by|from|in order to)\s(?!.*[,，:：;；—–]| - )|"
                 # ... or one ending on an article, preposition or conjunction (a wrapped paste,
                 # or a lead-in whose colon stands for the list after it: "hard because:").
                 r"\s(?:the|a|an|to|of|in|and|or|for|with|by|from|than|at|because)[:：]?$"),
)
# NOISE a request overrides: a limit on edits the user asks to record ("add a rule to CLAUDE.md:
# don't touch vendor/, it's synced") is the project's rule by the asking.
REQUEST_STANDS = frozenset({"task-scope"})

# MEMORY FILES agents load and who reads each: for requests, a session's own edits, the default.
MEMORY_FILE_NAMES: dict[str, str] = {
    "AGENTS.md": "codex", "AGENTS.override.md": "codex",  # Codex, and most other agents: AGENTS.md
    "CLAUDE.md": "claude", "CLAUDE.local.md": "claude",
    "GEMINI.md": "gemini",
}
# Other agents' memory files a user may name in a request; this tool reads and budgets none.
OTHER_MEMORY_FILES = ("memory.md", ".cursorrules", ".windsurfrules", ".clinerules",
                      "copilot-instructions.md", "conventions.md")


def slips(word: str) -> list[str]:
    """A word typed with one slip: a letter left out ("rmember"; not the last, a word cut short:
    "Remembe... never mind") or two letters swapped ("remebmer")."""
    left_out = {word[:i] + word[i + 1:] for i in range(len(word) - 1)}
    swapped = {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1)}
    return sorted((left_out | swapped) - {word})


# A memory file by its name, also under a hidden folder (".github/copilot-instructions.md") or
# typed with a space ("claude md"); not "docs/agents.md", a page, nor "agents.mdx".
_MEMORY_FILES = tuple(name.lower() for name in (*MEMORY_FILE_NAMES, *OTHER_MEMORY_FILES))
# ... and Cursor's folder of rule files, named as a whole ("add that to .cursor/rules"); a name
# no other thing has ("rules", "instructions" in it) also as typed without its dot, extension or
# hyphen ("windsurfrules", "copilot instructions").
_DISTINCT = [name.lstrip(".").removesuffix(".md") for name in _MEMORY_FILES
             if "rules" in name or "instructions" in name]
# ... and a file's name typed with one slip ("CLUADE.md", "memroy.md", "AGENT.md").
_MEMORY_SPELLED = (*_MEMORY_FILES, ".cursor/rules",
                   *(name[:-3] + " md" for name in _MEMORY_FILES if name.endswith(".md")),
                   *sorted({spelled for name in _DISTINCT
                            for spelled in (name, name.replace("-", " "))}),
                   *sorted({typed + ".md" for name in _MEMORY_FILES
                            if re.fullmatch(r"[a-z]{6}\.md", name)
                            for typed in (*slips(name[:-3]), name[:-4])}))
_NAMED_FILE = (r"(?<![a-z0-9_/-])(?:~/)?(?:\.[\w-]+/)*"
               r"(?:" + "|".join(map(re.escape, _MEMORY_SPELLED)) + r")(?![a-z0-9_])")

# Words before a request that change nothing ("ok, from now on ...").
_LEAD_WORDS = (r"(?:yeah|yes|yep|ok(?:ay)?|so|and|also|great|cool|perfect|alright|sure|hmm+|well|then|"
               r"now|good|nice|right|please|pls|hey|hi|oh|btw|by the way|fyi|for the record|\+1|"
               r"lessons? learned|quick one|one more thing|another thing|one thing|oye|hej|hei|"
               r"i\.e\.?|in other words|"
               r"first(?:ly)?|second(?:ly)?|third(?:ly)?|finally|lastly|"
               r"te rog|"
               r"bitte|alors|"
               r"au fait|d'ailleurs|übrigens|por cierto|aliás|кстати|a proposito|trouwens|"
               r"bueno|então|итак|ну|ок|окей|ладно|"
               r"allora|dobrze|oké|tamam|vậy|hãy|tolong|por favor|пожалуйста|proszę|lütfen|"
               r"per favore|好的?|"
               # ... and a greeting or thanks ("chào bạn, ghi nhớ ...", "привет, запиши ...")
               r"hello|thanks|thank you|thx|tnx|merci|danke|gracias|obrigad[oa]|grazie|спасибо|"
               r"dzięki|teşekkürler|cảm ơn|bonjour|salut|hola|hallo|ciao|привет|cześć|merhaba|"
               r"olá|oi|xin chào|chào bạn|chào)")
_LEAD = r"^(?:" + _LEAD_WORDS + r"(?:,|\s+[—–])?\s+)*"  # "Oh and — add ..."
_SURE = r"(?:make|be) sure (?:you|to)"  # asks as "can you" does ("make sure you remember ...")
# A wish that asks as "can you" does: "I'd like you to remember", "I want it remembered: X".
_WISH = r"(?:i|we)(?:'d| would)? (?:like|want|need)"
_WISHED = _WISH + r" (?:it|this|that|these) (?:remembered|noted|on record|written down)"
# A note taken, of any kind ("make a quick note", "keep a permanent note that X", "take note").
_NOTE_TAKEN = r"(?:make|take|keep|leave) (?:an? (?:\w+ )?)?note(?: of)?"
# "Can you" in the languages of REQUEST FRAMES: the verb after it is the frame's.
_MODALS = (r"(?:kannst|könntest) du|(?:peux|pourrais)-tu|(?:est-ce que )?(?:tu peux|vous pouvez)|"
           r"pouvez-vous|puedes|podrías|pode|podes|você pode|"
           r"можешь|можете|puoi|potresti|czy możesz|kun je|kan je")
# "Can you", "could we": a question that asks for a deed.
_CAN_YOU = r"(?:can|could|would|will) (?:you|u)|(?:can|could|shall) we"
_ASK = r"(?:(?:" + _CAN_YOU + r") (?:please |also )?|please |let'?s |let us |" \
       r"we should |you should |(?:would|do) you mind |" + _SURE + r" |" \
       + _WISH + r" you to |go ahead and |" \
       r"i (?:wonder|think|guess)(?: now)? (?:if |that )?" \
       r"(?:we|you) (?:should|could|might) (?:also )?)?"
# What may follow a memory named as a place: the end, a separator, a word that is no noun's.
_PLACE_ENDS = (r"(?=\s*(?:$|[.,:;!?：，—–]|-\s|so\b|that\b|to (?:say|always|never)\b|with\b|"
               r"as well\b|too\b|for (?:this|the|future|later|next)\b|please\b|somehow\b|now\b|"
               r"also\b|but\b|and\b))")
_MEMORY = r"(?:" + _NAMED_FILE + r"|(?:the |your |our )?(?:project )?" \
          r"(?:(?:long-term|persistent|permanent) )?" \
          r"(?P<bare>memory|memories|rules|instructions)(?: file)?" + _PLACE_ENDS + ")"
# "remember that for good", "... long term": every later session
_FOR_GOOD = r"(?:for good|permanently|forever|long[- ]term)"
_AFTER = r"(?:\s+(?:file|somehow|as well|too|please|now|also|" + _FOR_GOOD + r"))*\s*"
# A part of the memory named before it ("add that to the style section of CLAUDE.md").
_SECTION_OF = r"(?:(?:the |a )?[\w\"'`-]+(?: [\w\"'`-]+)? (?:section|part|heading) (?:of|in) )?"
# ... in Chinese: 记忆 or 规则 alone, not 规则引擎 (a rules engine).
_MEMORY_ZH = (r"\s*(?:" + _NAMED_FILE + r"|(?:项目的?)?(?:记忆|规则|memory)"
              r"(?=\s*(?:文件|里|中|[：:，,。]|$)))"
              r"\s*(?:文件)?(?:里|中|里面)?(?:去)?")
# ... after a task's clause and a word of sequence ("先把 bug 修了，然后在 CLAUDE.md 里记一下：X").
_LEAD_ZH = (r"^(?:[^，,。！？!?\n]{1,40}[，,]\s*(?=然后|顺便|另外|还有|再|也))?"
            r"(?:(?:好的?|很好|不错|对|是的|没错|嗯|那|那么|所以|另外|还有|请|你|然后|顺便|再|也)[，,\s]*)*")
_HELP_ZH = r"(?:帮我|麻烦你?)?"  # "help me", "trouble you to": where the memory is named
# What was said, pointed at: "it", "that", "what I just said".
_SAID = (r"(?:it|this|that|"
         r"what (?:i|we)(?:'ve)? (?:just |already )?(?:said|wrote|told you|mentioned))")
# ... said earlier, in the languages of REQUEST FRAMES, about what ("what I said earlier about X").
_SAID_EARLIER = (r"(?:what (?:i|we)(?:'ve)? (?:just |already )?(?:said|wrote|told you|mentioned)"
                r"(?: earlier| before| above| previously)?|"
                r"ce que (?:je viens de dire|j'ai dit)|lo que (?:acabo de decir|dije)|"
                r"o que (?:acabei de dizer|eu disse)|was ich (?:gerade )?gesagt habe|"
                r"quello che (?:ho appena detto|ho detto)|(?:то,? )?что я (?:только что )?сказал)")
_SAID_ABOUT = r"(?:\s+(?:about|on|regarding|sur|sobre|über|zu|su|о|про)\b[^,.;:]*)?"
# The project's rules file, by a name no phone or process has (a modal's request may name it).
PROJECT_RULES = ("project rules|project rule|project instructions|agents file|conventions file|"
                 "proje kuralları|proje kurallarına|projektregeln|"
                 "projekt-regeln|reglas del proyecto|règles du projet|fichier de conventions|"
                 "regras do projeto|regole del progetto|правила проекта|项目规则|projektanweisungen|"
                 "projectinstructies|projectregels|instructions du projet|"
                 "instrucciones del proyecto|instruções do projeto|istruzioni del progetto|"
                 "プロジェクトルール|프로젝트 규칙")
# MEMORY REQUESTS, the strongest evidence. Each pattern (re.I, from the start) ends in a `content`
# group, never reworded; empty or pointing back, the turn before is the candidates.
REQUEST_RULES: tuple[tuple[str, str], ...] = (
    # "add this to CLAUDE.md", "put in GEMINI.md that ...", "add to CLAUDE.md: never X".
    ("memory-file", _LEAD + _ASK + r"(?:add|put|note|write|save|record|include|document|mention|append|capture|"
                    r"keep|store|adding|putting|noting|writing|saving|recording|including|storing)"
                    r"\b(?P<object>[^.:;!?\n]{0,40}?)\s+(?:to|in|into|inside|on)\s+" +
                    _SECTION_OF + _MEMORY + _AFTER +
                    r"(?:(?:that|saying(?: that)?|to say(?: that)?)\b\s*|[:：,，—–-]\s*"
                    r"|to (?=always|never))?"
                    r"(?P<content>.*)$"),
    # "update CLAUDE.md that ...", "update CLAUDE.md to say that ...", "... but make sure that ...".
    ("update-memory-file", _LEAD + _ASK + r"(?:update|edit|amend|extend)\s+" + _MEMORY + _AFTER +
                           r"(?:(?:(?:to say|to mention|to note|to state|saying|so that|that|but|"
                           r"and)\b\s*)+"
                           r"(?:(?:make sure|ensure|mention|note|say)\b\s*(?:that\b\s*)?)?|[:：,，—–-]\s*)?"
                           r"(?P<content>.*)$"),
    # "Remember that ...": not "remember also you have ..." (a reminder for this session).
    ("remember-that", _LEAD + _ASK + r"(?:always |also )?remember(?: " + _FOR_GOOD + r")?"
                      r"(?: (?:for|in|across) (?:(?:every|all|each|future|later)\b[^,.;:]{0,30}?"
                      r"|(?:the )?next (?:time|sessions?)))?"
                      r"(?: that\b|\s*:)\s*(?P<content>.+)$"),
    # "I want future sessions to know that X": what every later session is to be told.
    ("future-should-know", _LEAD + r"(?:(?P<want>i want|i'd like|i would like)|make sure|ensure)"
                           r"\s+(?:that\s+)?"
                           r"(?:future (?:sessions|you|me|agents)|the next (?:sessions?|agent)|"
                           r"every (?:future |later )?session)"
                           r"\s+(?(want)to\s+(?:know|remember)|(?:knows?|remembers?))"
                           r"(?: that\b|\s*:)\s*(?P<content>.+)$"),
    # "The agents file should say that X", "GEMINI.md needs a line: X", "it would help if
    # CLAUDE.md said X": what the memory must hold.
    ("memory-should-say", _LEAD + r"(?:(?P<sure>(?:make sure|ensure)(?: that)?\s+)"
                          r"|(?P<can>(?:can|could)\s+)"
                          r"|(?P<wish>(?:it would|it'd) "
                          r"(?:help|be (?:good|nice|great|better|useful)) if\s+))?"
                          r"(?:the )?(?:"
                          + _NAMED_FILE + r"|memory file|" + PROJECT_RULES + r")"
                          r"(?: file)?\s+(?:(?:(?:should|must|needs to)\s+"
                          r"(?:say|mention|state|include|note)"
                          r"|(?(sure)(?:says|mentions|states)|(?!))"
                          r"|(?(can)(?:say|mention|state|include|note)|(?!))"
                          r"|(?(wish)(?:said|mentioned|stated|included|noted)|(?!)))"
                          r"(?: that\b)?|"
                          r"(?:needs|should have) (?:a|an|one) (?:line|note|rule|entry|bullet)"
                          r"\s*[:：—–-])"
                          r"\s*(?P<content>.+)$"),
    # "Make sure that's in CLAUDE.md", "This belongs in AGENTS.md: X": where what was said goes.
    ("belongs-in-memory", _LEAD + r"(?:(?:make sure|ensure)\s+(?:this|that|it)"
                          r"(?:'s| is| gets| goes)"
                          r"|(?:i|we)(?: want| need|'d like| would like) (?:this|that|it)"
                          r"|(?:this|that|it)"
                          r"(?: belongs| goes| lives| should (?:be|go|live)"
                          r"| needs to (?:be|go|live)))"
                          r"\s+(?:in|into)\s+(?:" + _MEMORY + r"|(?:your|ur) notes\b)" + _AFTER +
                          r"(?:[:：—–-]\s*)?(?P<content>.*)$"),
    # "Make that a rule.", "Please store this as a rule.": a standing rule, pointing back at what
    # was said ("make it a rule that X" is a label, RULE_LABEL; "add it as a rule" a linter's).
    ("make-it-a-rule", _LEAD + _ASK + r"(?:make|keep|store|save|treat|record|note)\s+"
                       + _SAID + r"(?:\s+down)?\s+(?:as\s+)?an?\s+(?:\w+\s+)?"
                       r"(?:rule|convention|instruction|guideline)(?P<content>[\s.!?]*)$"),
    # "From now on ...", "Going forward, ...": a rule for every session after this one.
    ("from-now-on", _LEAD + r"(?:from now on|(?:going|moving) forward(?! (?:to|with)\b)|"
                    r"from here on(?: out)?|henceforth)\b"
                    r"[,:]?\s*(?P<content>.+)$"),
    # "帮我记住" (help me remember), not "帮我记一下" (note it for this task).
    ("remember-zh", _LEAD_ZH + r"(?:" + _HELP_ZH + r"在" + _MEMORY_ZH + r"|帮我(?=[记記]住))?"
                    r"(?:要|需要)?"
                    r"(?:记住|记一下|记下来?|記住|記一下|記下來?)(?:这一?点|这个|这条)?"
                    r"[，,：:\s]*(?P<content>.*)$"),
    ("memory-file-zh", _LEAD_ZH + _HELP_ZH + r"(?:把|将)?(?:这条|这个|这些|这一点|以下|下面的?|上面的?|它|这段)?(?:规则|内容|信息|结论|约定)?"
                       r"(?:写进|写入|写到|加到|加入|添加到|记录到|记到|放到|放进|更新到|补充到)" + _MEMORY_ZH +
                       r"(?:吧|哈|啊|呀|哦|嘛)?[：:，,。\s]*(?P<content>.*)$"),
    ("update-memory-file-zh", _LEAD_ZH + r"(?:更新|修改)" + _MEMORY_ZH + r"[，,：:\s]*(?:说明?|写上|加上|注明)?[：:，,\s]*"
                              r"(?P<content>.*)$"),
    # 以后 / 今后 ... opening the sentence; not "编译以后再 ..." (after compiling).
    ("from-now-on-zh", _LEAD_ZH + r"(?:以后|今后|从现在开始|从今以后|从今天起|往后)"
                       r"[，,：:\s]*(?P<content>.+)$"),
)
# A purpose clause ("so we don't hit it again", "чтобы ...", 免得 ...): why, not what.
_PURPOSE = (r"(?:so (?:that )?|чтобы|damit|pour (?:ne|que|qu'|ne pas)|para (?:que|no|não)|per non|"
            r"żeby|aby|om (?:niet|te)|免得|省得|以免|下次别|下次不要)")
# Where in the memory a rule goes: "under 'Conventions'", "in the testing section", "at the top".
_PLACE = (r"(?:(?:under|in|into|to) (?:the |a )?(?:[\"“'`#][^\"”'`]*[\"”'`]?|\S+) "
          r"(?:section|heading|header|part)\b|under (?:the )?[\"“'`#]|at the (?:top|bottom|end)\b)")
# What a user may call a rule saved as one ("save this as a convention: X", "esto como regla: X").
RULE_KINDS = ("preference|preferences|rule|rules|convention|conventions|guideline|guidelines|"
              "policy|policies|gotcha|gotchas|fact|facts|regla|regra|règle|regel|regola|zasadę|"
              "regułę|правило")
# What a request's content is when it only points back at what was said.
REQUEST_POINTER = Lazy(
    r"(?i)^(?:(?:with )?(?:" + _SAID + r"|these|those|the above|above|all of (?:this|that)|"
    r"this too|it too|"
    r"as well|" + _FOR_GOOD + r")\b\s*|" + _SAID_EARLIER + _SAID_ABOUT + r"\s*|"
    # ... or says why it matters ("so we don't hit it again"), which part ("the jest bit"),
    # where from ("based on this session"), or "that" in another language.
    + _PURPOSE + r"[^:：]*|"
    r"(?:the|that|this) (?:\S+ ){0,3}(?:bit|part|thing|one|point|stuff|trick|decision|rule|fix|"
    r"tip)s?\b(?: (?:about|with|on|of|regarding)\b.*)?|(?:one|too|as well)[,，].*|"
    r"you(?:'ve| have| know| saw)\b.*|(?:save|add|keep|note|record|store) (?:it|this|that)\b|"
    r"(?:make (?:it|this|that) (?:permanent|stick|official)|"
    r"(?:keep|bear) (?:it|this|that) in mind)\b\s*|"
    # ... or names what it is ("remember that as a general preference").
    r"as (?:an? )?(?:\w+ )?(?:" + RULE_KINDS + r"|note|reminder)\b|"
    r"(?:based on|from) (?:this|the|our) (?:session|conversation|chat|discussion)\b.*|"
    # ... or says where it goes ("under \"Deploy\"", "in the testing section", "at the top").
    + _PLACE + r"[^:：]*|(?:after|before|below|above|under) (?:the )?[\w-]+(?: [\w-]+)?"
    r"(?: (?:section|heading|part))?|"
    r"这个|这条|这些|这一点|這個|這條|這些|這一點|上面的?|以上|それ|これ|あれ|이거|그거|이것|그것|"
    r"das|dies|ça|cela|eso|esto|isso|isto|это|це|questo|quello|to|det|dat|dit|itu|ini|bunu|şunu)*"
    r"[\s.。!！?？、，,]*$")
# ... and so does a remark on it ("Good catch, add that to CLAUDE.md", "这个很重要，记下来"): a few
# words that weigh what was said, no code and no number.
REMARK = Lazy(r"(?i)^(?:(?:this|that|it|isso|isto|esto|eso|das|dies|ça|c'|"  # "this is", "这个很"
              r"这一?点|这个?|那个?|これ|それ|이거|그거)"
              r"\s*(?:'s|s|is|was|es|est|ist|é|是|很|は|가|는)?\s*)?"
              r"(?:(?:very|really|super|so|a|an|a real|muy|très|sehr|muito|molto|"  # "very", "非常"
              r"真|非常|超|很|정말|とても)\s*)?"
              r"(?:(?:important|crucial|critical|key|essential|useful|helpful|good|great|nice|"
              r"catch|find|rule|gotcha|wichtig|importante|essentiel|utile|interessant|interesante|"
              r"interessante|важно|ważne|belangrijk|önemli|quan trọng)\b|"
              r"重要|关键|關鍵|有用|大事|중요|大切)"
              r"(?:\s*[^\s`\d]+){0,2}[\s.。!！]*$")  # and at most two words more
# ... and so does what a frame leaves when no rule is in it: a remark with a demonstrative as its
# subject ("that's a standing rule", "this is how we do it here"), the speaker's saying it ("I've
# said it before and I'll keep saying it"), or a fragment a preposition or a connective opens
# ("about me", "as a permanent instruction", "in memory so we don't", "and don't make me say it
# again", "or wherever you keep notes", "que no se te olvide"), or a Japanese particle that needs
# the word before it ("も忘れないように"); words only, LEFTOVER_WORDS at most.
LEFTOVER = Lazy(r"(?i)^(?:(?:that|this)(?:'s|’s| is| was)|"
                r"(?:about|as|of|for|with|and|but|or|nor|plus|que)\b|"
                r"[もはがをにでとのへや](?=[\u30a0-\u30ff\u3400-\u9fff])|"
                r"in (?:the |your )?(?:memory|notes)\b|"
                r"(?:as )?i(?:'ve|’ve| have)?(?: already| just)? (?:said|told you|mentioned)"
                r" (?:it|this|that)\b)"
                r"[^\W\d_]*(?:[\s'’-]+[^\W\d_]+)*[\s.!。！]*$")
LEFTOVER_WORDS = 10
# What a memory is asked to say, after "so it": "so it says X", "so it records that X".
_SO_IT_SAYS = r"so (?:that )?it (?:says|reads|states|records|notes|mentions)(?: that)?"
# "with this: X", "so it says X": the frame points forward at the rule that follows.
REQUEST_FORWARD = Lazy(r"(?i)^(?:(?:with )?the fact that\s|"
                       r"(?:with )?(?:(?:this|these|the following)"
                       r"(?: (?:rule|note|line)s?)?|"
                       r"an?(?: new)? (?:rule|note|line|entry|bullet))\s*[:：]|"
                       r"(?:please|pls)\s*[:：]|to (?=(?:always|never)\b)|"  # "remember to always X"
                       + _SO_IT_SAYS + r"\s|"
                       r"so (?:that )?[^:：—–]{1,60}(?:[:：]|\s[—–-]\s)|"  # "so we don't forget — X"
                       + _PLACE + r"[^:：]{0,40}[:：])\s*")
# Content naming a topic ("how the cache works"), not a rule, points back as "this" does.
REQUEST_TOPIC = Lazy(
    r"(?i)^(?:to (?!(?:say|mention|note|state|remember|always|never)\b)[a-z]+\b|(?:for|about|regarding|re:|on)\s|"
    r"with (?:the|our|this|these|those|a|an|any|all|some|more|info|information|details|notes|guidance)\b|"
    r"(?:how|what|why|which)\s|关于|有关)")
# A rule quoted inside a request's frame ('add "never push to main" to CLAUDE.md', 「X」と書いて):
# the content when the rest points back; a quoted name ("Code style") has fewer words.
QUOTED_RULE = Lazy(r'[“"«„「『]([^“”"«»„「」『』\n]{6,}?)[”"»“」』]')
QUOTED_WORDS = 3
# Lines that are list items or steps of a plan: their sentences are never requests.
PLAN_LINE = Lazy(r"^\s*(?:[-*+•]|\d{1,3}[.)]|#{1,6}|>|(?:step|phase|task) \d+\b|第\s*\d+\s*步)", re.I)
# Statements one request pulls in, the strongest first: more is the whole answer again.
REQUEST_PULL = 3
ONE_WORD = 2  # characters of a nod in a script without spaces (对, 好的, はい, 맞아): no rule
# The agent's offer to record something ("Should I add that to CLAUDE.md?", "要不要在 CLAUDE.md
# 里记一下：X？", "I can add it to memory if you like."), a request once the user nods to it: a
# question or an "if you like" around a request's words.
OFFER_END = Lazy(r"(?:\s*[?？]+|,?\s+if (?:you(?:'d)? (?:like|want)(?: me to)?|that helps|useful)"
                 r"\b[^.!?]*)[.!。]?\s*$", re.I)
# ... and the nod: a short reply opening with a yes in its languages (nodded judges what follows).
CONSENT = Lazy(r"(?i)^(?:yes|yeah|yep|yup|sure|ok(?:ay)?|please(?: do)?|do it|go ahead|go for it|"
               r"sounds good|good idea|absolutely|definitely|of course|oui|ja|jep|sí|si|sim|да|"
               r"давай|tak|evet|có|ya|sì|はい|ええ|네|예|是的?|好的?|对|可以|行|嗯)"
               r"(?![\w'-])")
CONSENT_REACH = 60  # characters of a nod: more says something of its own
NOD_MORE = Lazy(r"(?i)(?:(?:please )?(?:go ahead|do it|do that|go for it|sounds good|thanks?|"
                r"thank you|add it|save it|note it|gerne|gern|dale|claro|vas-y|vai|va bene|давай|"
                r"конечно)[\s.!,]*)+")
CONSENT_CJK = 6  # characters after a yes in a script without spaces ("记上吧", "저장해 주세요")

# REQUEST FRAMES, in any language (after REQUEST_RULES): a frame opening the sentence ("Merk dir:
# X") or closing it ("X — add that to CLAUDE.md"), and the rule on the far side of a separator.
# Phrases (lower case) of remembering, of every later session, of recording beside a memory's name.
REMEMBER_PHRASES = (
    "remember|rember|don't forget|do not forget|memorize|memorise|keep in mind for next time|"
    "keep in mind for future sessions|keep in mind for the future|keep in mind going forward|"
    "make a note|take a note|leave a note|merk dir|merke dir|merken|retiens|"
    "souviens-toi|rappelle-toi|mémorise|"
    "mémoriser|recuerda|acuérdate|memoriza|lembre|lembra|lembre-se|lembra-te|запомни|ricorda|"
    "θυμήσου|να θυμάσαι|תזכור|זכור|"
    # ... or write it down for later ("lesson learned, write it down: X", "Schreib dir auf: X")
    "write it down|write this down|write that down|note it down|note this down|jot it down|"
    "jot this down|schreib dir auf|schreib dir das auf|notier dir|"
    "ricordatelo|memorizza|zapamiętaj|onthoud|hatırla|unutma|ghi nhớ|nhớ|याद रख|запам'ятай|ingat|"
    "zapamatuj|kom ihåg|husk|huske|muista|覚えて|覚えと|記憶して|忘れないで|기억해|메모해|ricordati|segnatelo|"
    "onthouden|zapamatuj si|ingatlah|মনে রাখো|মনে রেখো|"
    "メモして|メモしておいて|メモしといて|メモっといて|تذكّر|تذكر|hafızana al|aklında tut|"
    "याद रखना|make a memory of|commit to memory|commit it to memory|commit this to memory|"
    "commit that to memory")
FUTURE_PHRASES = (
    "from now on|going forward|from here on|henceforth|ab jetzt|"
    "von nun an|von jetzt an|désormais|dorénavant|à partir de maintenant|a partir de ahora|"
    "de ahora en adelante|daqui pra frente|daqui para frente|a partir de agora|de agora em diante|"
    "отныне|впредь|с этого момента|d'ora in poi|da ora in poi|d'ora in avanti|da adesso in poi|"
    "od teraz|od tej pory|vanaf nu|voortaan|bundan sonra|từ giờ|từ nay|अब से|відтепер|"
    "mulai sekarang|od teď|från och med nu|今後は|これからは|앞으로는|이제부터|"
    # A note for reference, which no sentence of today's work opens with (and LATER_SESSIONS).
    "for future reference|for next time|für zukünftige sitzungen|für künftige sitzungen|"
    "para referência futura|para referencia futura|pour les prochaines sessions|"
    "para futuras sesiones|para as próximas sessões|in het vervolg|次回以降|다음부터")
# ... and every later session named in English ("in all future sessions", "for upcoming chats",
# "for every session"); "the next session" alone is one session's plan.
_LATER_SESSIONS = (r"(?:in|for|across) (?:(?:all|every|each|any)(?: the)? |the )?"
                   r"(?:(?:future|later|upcoming|subsequent|coming) "
                   r"(?:sessions?|chats?|conversations?)|next (?:sessions|chats|conversations)|"
                   r"(?<=every )(?:session|chat|conversation))\b")
# A standing rule announced ("Let's make it a rule that X", "New rule: X"), maybe with its place
# ("Rules for AGENTS.md: X"); not "add a rule", as often a linter's or a firewall's.
NEW_RULE_ABROAD = ("neue regel|nouvelle règle|nueva regla|nova regra|nuova regola|nieuwe regel|"
                   "nowa zasada|новое правило|yeni kural|quy tắc mới|新规则|新規則|新しいルール|"
                   "새 규칙|새로운 규칙")
_RULE_PLACE = r"(?:(?:the |your )?(?:memory file|" + _NAMED_FILE + r")|(?:the |your )memory)"
# Words that make a rule a standing one ("a new rule", "a standing convention").
_STANDING = r"(?:new|standing|permanent|house|team|golden|general|hard)"
RULE_LABEL = (r"(?:(?:(?:let'?s|let us|please|we should)\s+)?"
              r"(?:make (?:it|this|that) an? (?:\w+ )?(?:rule|convention)"
              r"|codify(?: (?:it|this|that))?)"
              # "Let's set a standing rule", "here's a new convention"
              r"|(?:(?:(?:let'?s|let us|we(?:'ll| will)?|i(?:'ll| will)?)\s+)?"
              r"(?:set|setting|introduce|introducing|here'?s|here is|one more|another)"
              r"\s+(?:an?\s+)?)?"
              r"(?:" + _STANDING + r" )+(?:rule|convention)"
              r"|(?:standing|permanent) instructions?"
              r"|" + NEW_RULE_ABROAD +
              r"|rules? for (?:this|the|our) (?:project|repo|repository|codebase|team))"
              r"(?: (?:in|for|to|für|pour|para|per|voor|dla|для|için) " + _RULE_PLACE + r")?"
              r"|rules? for " + _RULE_PLACE)
# ... these only before a colon ("In the future: X", not "In the future we might add OAuth").
FUTURE_LABELS = ("in the future|for the future|künftig|zukünftig|in zukunft|à l'avenir|"
                 "lesson learned|lessons learned|"
                 "en el futuro|na przyszłość|"
                 # "for next time", "for later" ("Note pour la suite : X")
                 "pour la suite|pour la prochaine fois|para la próxima vez|para la próxima|"
                 "para a próxima vez|per la prossima volta|für das nächste mal|fürs nächste mal|"
                 "na następny raz|на будущее|на следующий раз|voor de volgende keer|"
                 "bir dahaki sefere|lần sau|per il futuro|pra próxima vez|pra próximas vezes|"
                 "para as próximas vezes|para próximas vezes|für die zukunft|pour le futur")
RECORD_PHRASES = (
    "add|put|keep|note|write|save|make|record|include|document|mention|append|capture|store|jot|"
    "adding|putting|noting|writing|saving|recording|jotting|"
    "update|codify|memorialize|memorialise|enshrine|"
    # ... and the casual verbs of putting a thing somewhere ("pin this in memory -> X")
    "pin|stash|lodge|etch|slot|bake|burn|tuck|slap|chuck|log|register|"
    "trag|trage|füg|füge|schreib|notier|vermerk|vermerke|vermerken|nimm|aufnehmen|speicher|"
    "ajoute|mets|écris|note-le|grave|grave-le|garde|garde-le|"
    "enregistre|consigne|consigner|"
    "añade|agrega|pon|escribe|anota|apunta|apúntalo|guarda|guárdalo|guarde|añada|"
    "agregue|apunte|escriba|adiciona|adicione|"
    "coloca|coloque|escreve|anote|salva|salve|registra|registre|добавь|запиши|занеси|внеси|сохрани|"
    "aggiungi|metti|scrivi|annota|nota|"
    "dodaj|zapisz|wpisz|voeg|zet|zetten|toevoegen|opschrijven|schrijf|"
    "noteer|ekle|yaz|kaydet|thêm|ghi|lưu|πρόσθεσε|γράψε|σημείωσε|הוסף|תוסיף|תרשום|כתוב|lisää|"
    "احفظ|أضف|اكتب|adaugă|notează|اضافه کن|ذخیره کن|segna|segnalo|segnala|legg inn|legg til|"
    "legg det inn|"
    "jegyezd fel|írd be|πρόσθεσέ|जोड़ दो|लिख दो|worth adding|worth saving|worth recording|"
    "занотуй|зафиксируй|зафиксировать|जोड़|लिख|追加|書いて|書いと|追記|"
    "記録|保存|추가|적어|저장|persist|stick|festhalten|eintragen|notieren|dopisz|zanotuj|додай|"
    "збережи|sla|přidej|zapiš|ulož|lägg till|lägg in|skriv|spara|tambah|tambahkan|tambahin|simpan|"
    "catat|기록|加一条|加上|加到|加进|加入|写进|写到|写入|写上|添加|补充|记在|記在|记到|記到|"
    "넣어|सेव कर लो|सेव कर दो|सेव करो|poznamenej|noteren|"
    "apúntate|apúntalo|grava|grave|gravar|segnati|"
    "नोट कर लो|नोट कर दो|नोट करो|"
    # ... as "can you" asks them ("¿puedes añadir ...").
    "añadir|agregar|guardar|poner|escribir|anotar|adicionar|colocar|escrever|ajouter|"
    "mettre|écrire|noter|aggiungere|mettere|scrivere|annotare|hinzufügen|speichern|aufschreiben|"
    "schreiben|"
    "dodać|zapisać|добавить|записать|сохранить")
# What a line of a memory is called, in the languages of REQUEST FRAMES ("new rule for CLAUDE.md:").
LINE_NOUNS = ("rule|entry|guideline|convention|regel|eintrag|règle|entrée|regla|entrada|regra|"
              "regola|voce|правило|правила|запис|reguła|regułę|wpis|kural|quy tắc|规则|条目|ルール|"
              "規則|규칙|항목")
# A memory a user names in a request, beside the files (_NAMED_FILE): a bare "memory" or
# "rules" is as often RAM or a linter's ("add more memory to the pod", "update the lint rules").
MEMORY_SAID = (
    "memory file|memory files|your memory|project memory|long-term memory|persistent memory|"
    # ... and the agent's memory in other languages ("ta mémoire", not a process's).
    "ta mémoire|votre mémoire|tu memoria|su memoria|la tua memoria|deinem gedächtnis|"
    "dein gedächtnis|je geheugen|jouw geheugen|twojej pamięci|swojej pamięci|твою память|"
    "твоей памяти|hafızana|belleğine|bộ nhớ của bạn|memorimu|memori kamu|你的记忆|你的記憶|"
    "memory bank|instructions file|agent instructions|your instructions|your notes|your rules|"
    # ... and what else a user calls the agent's own ("etch that into your brain")
    "your brain|ur brain|your head|your system prompt|your knowledge base|project knowledge base|"
    "tuas notas|suas notas|tus notas|tes notes|vos notes|deine notizen|deinen notizen|le tue note|"
    "твои заметки|"
    "notlarına|notlarıma|ur notes|ur memory|нотатки|свої нотатки|minnesfilen|"
    "rules file|rule file|standing instructions|conventions doc|"
    # ... and the rules or instructions file in other languages
    "fichier de règles|fichier d'instructions|archivo de instrucciones|arquivo de instruções|"
    "file delle istruzioni|file di istruzioni|pliku z regułami|plik z regułami|fișierul de reguli|"
    "archivo de reglas|arquivo de regras|file delle regole|file di regole|regeldatei|"
    "файл правил|файлу правил|файл инструкций|קובץ הכללים|לקובץ הכללים|קובץ ההנחיות|"
    "לקובץ ההנחיות|فایل قوانین|الذاكرة|ذاكرتك|"
    + PROJECT_RULES +
    "|project notes|projektnotizen|projectnotities|notes du projet|notas del proyecto|"
    "notas do projeto|note del progetto|заметки проекта|notatki projektu|"
    "proje notları|"
    "fichier mémoire|mémoire du projet|memoria del proyecto|memória do projeto|"
    "memoria del progetto|projektgedächtnis|pamięci projektu|память проекта|file di memoria|"
    "archivo de memoria|arquivo de memória|speicherdatei|记忆文件|メモリファイル|메모리 파일")
# ... and a bare "memory" in other languages, where a verb of recording right before it and a
# colon, a dash or "that" frame it ("Guarda en la memoria: X", "Zapisz w pamięci, że X"); with a
# thing between ("Guarda los resultados en memoria: ..."), or without them, it is as often RAM's.
MEMORY_BARE = ("memory|memoria|la memoria|mémoire|la mémoire|memória|a memória|gedächtnis|"
               "pamięci|pamięć|память|памяти|geheugen|hafıza|hafızaya|bộ nhớ|memori|记忆|記憶|"
               "メモリ|메모리|मेमोरी|"
               # ... and "the rules", as "add to the rules: X" is in English
               "reglas|las reglas|règles|les règles|regeln|den regeln|regras|as regras|regole|"
               "le regole|regels|de regels|zasad|правила|правил|pravidel|pravidla|kurallara|"
               "kurallar|sääntöihin|paměti|paměť|muistiin|minnet|노트|"
               # Persian, with and without the joiner the cleaner removes (U+200C)
               "حافظه‌ات|حافظه‌ی|حافظهات|حافظهی|حافظه|"
               # ... and "the instructions"
               "instrucciones|las instrucciones|istruzioni|instruções|anweisungen|инструкции|"
               "instrukcí|instrukce|instrukcje")
# What divides a frame from its rule: a colon (before a space or after CJK: `https:` or `h1:` is a
# token's), a dash, "that" in its languages, "so it says".
REQUEST_SEPARATOR = (r"\s*(?::(?!\S)|(?<=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]):|"
                     r"[：—–←→]|\s-\s|\s<?-+>?\s|"
                     r"(?<!para)(?<!pour)(?<!\bso)(?<!så)"  # "para que", "so that": _PURPOSE
                     r"(?<!avant)(?<!parce)(?<!bien)(?<!sans)(?<!afin)(?<!alors)"  # "avant qu'on"
                     r",?\s+(?:(?:that|saying|dass|que|что|che|że|že|dat|là|rằng|कि|що|bahwa|att|"
                     r"că)(?=\s)"
                     r"|qu'(?=\w))|"
                     r"\s+" + _SO_IT_SAYS + r"(?=\s))\s*")
# A frame that denies, asks or tells ("don't add this", "did you save it?", "I added it").
REQUEST_NEGATION = (r"\b(?:(?:don't|do not)(?! forget\b)|(?<!do )not|"
                    r"no need|nothing|nicht|pas|не|non|nie|niet|không)\b|"
                    r"不用|不要|不必|别|先不|没必要|已经|しないで|하지 마|しました|ました|했어|"
                    r"했습니다|过了|\bđã\b")
# This session's moment, not a rule for later ones: "remember to commit", "... today"; and a task
# for today closing it ("..., update the tests", "— поправь тесты").
_TODAY_TASK = (r"[—–,;]\s*(?:(?:and|then|please|pls)\s+)?"
               r"(?:update|fix|adjust|adapt|change|modify|rewrite|поправь|исправь|обнови|измени|"
               r"adapte|corrige|modifie|actualiza|ajusta|aktualisiere|korrigiere|aggiorna|"
               r"correggi)\s+\w")
# ... this task's alone: what a pointer then points at is not recorded either (pull_in).
_THIS_TASK = (r"\bfor this (?:task|session|pr|conversation|chat|thread)\b|"
              r"이번 (?:작업|세션|대화)|이번에만|この作業|このタスク|このセッション|今回だけ|今回のみ|"
              r"今回の\S{1,6}だけ|这次任务|本次任务|这次会话|本次会话|这次对话|只在这次|仅限这次")
REQUEST_MOMENT = (_TODAY_TASK + r"|"
                  # ... "remember to always X" is a rule
                  r"\b(?:(?:remember to|don't forget to)(?! (?:always|never|alwasy|allways)\b)|"
                  r"n'oublie pas de|no olvides|"
                  r"não (?:se )?esqueça de|vergiss nicht|non dimenticare di|today(?!'s)|tonight|"
                  r"tomorrow(?!'s)|yesterday(?!'s)|for now|right now|at the moment|"
                  r"for the next (?:few )?steps?|"
                  r"für den nächsten schritt|pour la prochaine étape|para el siguiente paso|"
                  r"para o próximo passo|per il prossimo passo|на следующий шаг|na następny krok|"
                  r"this (?:morning|afternoon|evening|week)|heute|im moment|en ce moment|"
                  r"en este momento|ahora mismo|neste momento|agora mesmo|in questo momento|"
                  r"сейчас|сегодня|aujourd'hui|hoy|hoje|oggi|dzisiaj)\b|今天|今日|오늘|"
                  r"(?:の|こと)を忘れないで|" + _THIS_TASK)
# A place that is no memory ("make a note in the ticket that X"): the frame records elsewhere.
_OTHER_PLACE = (r"\b(?:in|to|into|on)\s+(?:the|a|this|that|our|my|your)\s+(?:\w+\s+)?"
                r"(?:ticket|issue|pr|pull request|description|changelog|readme|commit message|"
                r"comment|docs|documentation|jira|wiki|calendar|spreadsheet)\b")
REQUEST_DENIED = (r"\bi(?:'m|'ve|'d|'ll)?\s+(?:remember|recall|think|guess|believe|know|added|"
                  r"wrote|saved|put|did|have|had|was|am|removed|deleted|moved|noted|never)\b|"
                  r"^(?:we|you(?! (?:can|could|should)\b)|he|she|they|did|do(?! not forget)|does|have|has|had|was|"
                  r"were|is|are|what|why|how|when|where|which|who|to)\b|\?|？|"
                  # ... or moves the memory file itself ("add CLAUDE.md to .gitignore"; not "I'd
                  # like CLAUDE.md to say").
                  r"(?:" + _NAMED_FILE + r"|memory file)\s+"
                  r"(?:(?:into|onto)\s|to\s+(?:(?:the|a|an|your|our|my)\s|\S*[./]))|"
                  + _OTHER_PLACE + "|" + REQUEST_NEGATION + "|" + REQUEST_MOMENT + "|"
                  # ... or names the memory as a place not taken ("in Issues rather than memory")
                  r"\b(?:rather than|instead of)\s+(?:in(?:to)?\s+|to\s+)?(?:the\s+|your\s+|ur\s+)?"
                  r"(?:memory|notes|" + _NAMED_FILE + r")")
# Politeness after a rule is not the rule ("..., bitte", "... nhé", "thanks").
REQUEST_COURTESY = (r"[\s,，.。!！]*(?:please|pls|thanks|thank you|bitte|danke|merci|stp|"
                    r"s'il te plaît|por favor|gracias|obrigad[oa]|valeu|спасибо|пожалуйста|grazie|"
                    r"per favore|dzięki|proszę|bedankt|alsjeblieft|lütfen|teşekkürler|cảm ơn|nhé|"
                    r"plz|porfa|плз|плиз|takk|tack|"
                    r"nha|धन्यवाद|谢谢|ありがとう|감사합니다)[\s.。!！]*$")
FRAME_REACH = 70  # characters a frame may take: more is a sentence of its own
ENCLITIC = "l[oaie]s?|ne"  # a Romance verb's object as its suffix ("salvalo", "guárdalo")
VERB_ENDING = 6  # characters after a verb in a script without spaces: "してください", "해 줘"
# Where a closing frame starts: punctuation only ("X — add that to CLAUDE.md"), ASCII's before a
# space (`1,000`, `h1:` are a token's).
FRAME_CLOSE = Lazy(r"\s*(?:[:,;](?!\S)|[：—–←→，、；]|\s-\s|\s<?-+>?\s)\s*")
# Scripts written without spaces between words: their frame words may stand anywhere.
CLOSE_SCRIPT = Lazy(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
# "Can you ...?", "I wonder if we should ...?" ask for a deed, in any language: a question that
# is a request.
POLITE_ASK = Lazy(r"\b(?:" + _CAN_YOU + r")\b|\bi wonder\b|"
                  r"\b(?:can|could) the (?:\S+ ){1,2}(?:say|mention|state|include|note)\b|"
                  r"\b(?:" + _MODALS + r")\b|"
                  r"能不能|可以|能否|ください|(?:もらえ|くれ)(?:ます|る)|주세요|줄래")
# "..., ok?" asks for a nod, not an answer; "..., right?" asks whether a fact holds.
TAG_QUESTION = Lazy(r"[\s,，]*(?:ok|okay|alright|got it|please|d'accord|vale|tá|"
                    r"beleza|né|ладно|好吗|好不好)\s*[?？]\s*$")
# The speaker's own plan, news or doubt as a request's content ("Going forward, I'll handle the
# deploy", "..., I ran the tests", "je vais tester moi-même", "I'm not sure"), not a standing
# fact or a wish ("I'm on Windows", "I want tabs").
OWN_NEWS = Lazy(r"^(?:[^,，]{0,80}[,，]\s*)?(?:(?:I|i(?='ll))"
                r"(?:'ll| will| shall|'m going to| am going to| (?:just|already) \w+|"
                r" (?:ran|did|was|tried|had|found|saw|got|changed|updated|fixed|added|removed|"
                r"moved|renamed|switched)|'m not sure| am not sure| don't know)"
                r"\b(?! (?:need |want |like )?you\b)|"
                r"(?i:je vais|j'vais|je m'en occupe|je m'occupe|voy a|me encargo|"
                r"(?:eu )?(?:mesmo )?vou|ich werde|werde ich|ich kümmere mich|kümmere ich mich|"
                r"mi occupo io|me ne occupo io|я буду|я сам|я займусь)\b|我(?:会|自己来))")
# A subject of its own: "Remember also you have LSP access" says something, pointing nowhere.
OWN_CLAUSE = Lazy(r"(?<!can )(?<!could )(?<!would )(?<!will )(?<!sure )\b(?:you|we|they|he|she)\b")
# A clause after a bare "remember" says what to remember ("remember logs use structlog", "... the
# prod cluster is eu-west-1"); without a verb the words remind of a thing ("the meeting at 3pm").
CLAUSE_END = Lazy(r",|\b(?:so|because|since|when|if|while|until)\b")  # the verb is in the first
# A condition in a frame ("add this if it isn't there yet: X"): no frame's words, nor its "not" a
# denial (frame_kind); opening a request's content before its colon, no rule's (memory_request).
IF_CLAUSE = Lazy(r"\s*,?\s*\b(?:if|unless|in case)\b[^,:;：，]*")
IF_COLON = Lazy(r"(?i)^(?:if|unless|in case)\b[^:：,]*[:：]\s+")
REASON_OPENS = Lazy(r"(?i)(?:since|because|as|although|though|whereas)\b")
CONDITION_OPENS = Lazy(r"(?i)(?:when|whenever|if|unless|after|before|once|while|during|for|in|on)"
                       r"\b")
CLAUSE_VERB = Lazy(r"\b(?:is|are|isn't|aren't|has|have|must|should|shouldn't|can't|cannot|won't|"
                   r"doesn't|don't|never|always|uses?|needs?|lives?|runs?|requires?|goes)\b")

# A defect's forms: something not done or not there, twice, a typo (SCORE's "defect"); not done
# before or after another thing is an order the code keeps ("not initialised before the migration").
_DEFECT = (r"\b(?:(?:(?:is|was|are|were)(?:n't| not)|(?:was|were) never|never (?:got|gets)|"
           r"not being) (?:imported|defined|declared|called|set|initiali[sz]ed|passed|added|"
           r"registered|installed|included|exported|populated|created|awaited|closed|saved|loaded|"
           r"attached|wired|reset|removed|mounted|connected|subscribed|returned|copied|started|"
           r"enabled|applied)|"
           r"(?:is|are|was|were) missing|missing from|a missing|misspell\w*|typo|"
           r"(?:declared|defined|registered|imported|called) twice|forg[oe]t(?:ten)?|"
           r"(?:wasn't|isn't|weren't|aren't) using)\b"
           r"(?! (?:before|after|until)\b)")

# SCORE (bench/quality.py): a candidate starts at BASE_SCORE, gains each matching rule's
# points and is proposed from MIN_SCORE. Rule: name, role ("" for both), pattern, points.
SCORE_RULES: tuple[tuple[str, str, str, int], ...] = (
    # A bug's mechanism named as such ("Root cause: X only reads ...", "the root cause was X"),
    # not a root cause a plan or a report names ("fix the root cause", "Found the root cause.").
    ("root-cause", "", r"\broot cause\b[*_]*(?: \([^)]*\))?(?: \w+){0,2}?[*_]*\s*[:：]|"
                       r"\broot cause (?:of [^.:;]{1,60}? )?(?:is|was)\b|根本原因|根因", 3),
    # "X only reads/handles/finds ...": a gotcha about the code; "只返回了" (了: once) narrates.
    ("only-does", "", r"\bonly (?:reads|read|handles|works|runs|supports|finds|queries|checks|"
                      r"returns|fires|applies|looks|tracks|reflects)\b|"
                      r"[只仅](?:读取?+|处理|支持|查找|检查|返回|适用|跟踪)(?!了)", 3),
    # What the code always or never does ("X is always called after Y") is a fact, not an order.
    ("always-does", "", r"\b(?:is|are) (?:always|never)\b|\b(?:always|never) [a-z]+[^s\W]s\b|"
                        r"总是|始终|永远|从不|从来不", 1),
    # Behaviour that is deliberate, so a future session does not "fix" it.
    ("intentional", "", r"\b(?:intentional(?:ly)?|on purpose|by design|best[- ]effort)\b|故意|有意|特意|尽力而为", 2),
    # One incident as the subject ("The error occurs because ...", "The build is failing ..."):
    # the day's diagnosis. "The issue is that X ..." gives the code the subject (issue-was).
    ("incident", "", r"^the (?:error|build|tests?|failure|crash)\b|"
                     r"^the (?:issue|problem|bug)\b(?! (?:is|was) (?:that|when)\b)", -1),
    # A defect as found ("X is not imported", "the field was missing", "defined twice"): once
    # fixed it does not bite again, unlike a mechanism of the code or a tool. Not a condition
    # ("falls back when the variable is not set"), which a rule names.
    ("defect", "", r"^(?!.*\b(?:if|when|whenever|unless|whose|until|once)\b[^,;.]*?" + _DEFECT + ")"
                   r".*?" + _DEFECT, -2),
    # "The issue was that ...": a root cause stated as a sentence.
    ("issue-was", "", r"\bthe (?:issue|problem|bug) (?:is|was) (?:that|when)\b|原因是", 1),
    # A reason or mechanism joined to the claim: "because", "since", "which means".
    ("reason", "", r"\b(?:because|since|so that|which means|caused by|causing|so|which|"
                   r"without|even though|even in)\b|因为|由于|导致|所以", 1),
    # Names a concrete thing in the code: `load_config()`.
    ("names-code", "", r"`[^`]+`", 1),
    # A decision stated as made, the archetype of a memory line: "We chose X over Y" ("the
    # chosen model", an adjective, is none).
    ("decided", "", r"\b(?:decided|chose|(?:'ve|have|has|had|was|were|is|are|been) chosen|opted|"
                    r"went with|settled on)\b|决定|选择了|选用|改用|采用", 1),
    # The user's rule ("Always", "Prefer", 不要), also after a condition; "Don't" with "every"
    # or a reason.
    ("user-rule", "user", r"^(?:(?:if|when|whenever|before|after|once|unless|for|in) [^,，\n]{1,60}[,，]\s*)?"
                          r"(?:please )?(?:always|never|only ever|prefer)\b|^(?:please )?(?:don't|do not|make sure|avoid)"
                          r"\b.*\b(?:always|never|every|each|any|whenever|unless|because|since|so that|otherwise|"
                          r"in (?:this|the|our) "
                          r"(?:repo|repository|project|codebase)|in ci|by default)\b|"
                          r"^(?:请)?(?:不要|必须|永远|总是|禁止|务必|一定要)", 3),
    # ... or with a subject ("We must always pin"), not "I"; "X is never ..." describes, not rules.
    ("user-subject-rule", "user", r"^(?!(?:i|i'm|i'll|i've|if|when|maybe|do|does|can|could|should|would|"
                                  r"is|are|what|why|how)\b)(?:(?!need to|make sure|ensure|going to|(?:can|could|may|might) "
                                  r"(?:always|never))[^?\n]){1,80}?"
                                  r"(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )(?<!\bbe )"
                                  r"\b(?:must|mustn't|shall|(?:always|never)(?! +[a-z]*[^s ]s\b)|are not allowed to|"
                                  r"is not allowed to|"
                                  r"are required to|is required to|prefer|prefers)\b|^(?:every|each|all|any|no)\b[^?\n]{0,80}?"
                                  r"\bshould\b|^(?!我(?!们))(?:(?!需要确保|确保|打算)[^？?\n]){1,40}?(?:必须|不要|总是|禁止|不得|永远|一律|务必|"
                                  r"不允许|只能|偏好)", 3),
    # A prohibition ("Do not reinit ...", "Never delete ..."), whoever says it: an imperative is a
    # whole rule, kept as often on other teams as a user's rule. The user's rule asks more of it
    # (user-rule) and scores more.
    ("prohibition", "", r"^(?:please )?(?:do not|don't|never|avoid)\b"
                        r"|^(?:请)?(?:不要|别|切勿|禁止|避免)", 2),
    # The user's words outrank the agent's summaries of them, where they say what kind of memory
    # they are: with a marker alone (FORM_RULES) a user's sentence is a task or a paste as often.
    ("from-user", "user", r"", 1),
    # "X should be Y" is mostly a plan for one change, not a rule.
    ("should", "", r"\bshould\b(?!n't)|应该", -1),
    # "We need to make sure ..." is a plan.
    ("plan", "", r"\b(?:ensure|make sure|need to|needs to|going to)\b|需要确保|确保|打算", -2),
    # Status of the moment ("now", "currently", "already"): what holds today, not next month;
    # as rare a keep as a plan, on both team halves and on the shared sessions.
    ("moment", "", r"\b(?:now|currently|already|yet)\b|现在|目前|已经", -2),
    # A question inside the sentence: it asks rather than states; one in quotes is quoted.
    ("asks", "", r"\?(?![\"'”’»」])\S*\s|？", -1),
    # Hedges: a reviewer cannot approve "might", nor "usually", a rule of thumb about tools in
    # general ("Next.js projects usually ..."), not a fact of this project: kept more rarely than
    # the average candidate on every team.
    ("hedge", "", r"\b(?:might|may|probably|perhaps|maybe|i think|likely|seems?|could|"
                  r"i guess|possibly|potentially|presumably|usually|typically|generally|in general|"
                  r"traditionally|commonly|often)\b|可能|也许|或许|大概|估计|多半|通常|一般来说|"
                  r"普遍|传统上|往往", -2),
    # First and second person (您 the polite "you"): conversation, not a fact about the project.
    ("conversation", "", r"\b(?:i|i'm|i've|my|me|you|your|let's|let me|we'll|we're|our)\b|"
                         r"我(?!们)|你|您|我们的", -2),
    # What was done in this session: "I changed ...", "We've updated ...", 我修改了 ...
    ("did-this-session", "", r"^(?:i|we)(?:'ve| have)?\s+(?:just\s+|now\s+|also\s+)?(?:updated|changed|added|"
                             r"removed|fixed|implemented|refactored|moved|renamed|replaced|created|wrote|modified|"
                             r"deleted|switched|made|rewrote|reverted)\b|^(?:我|我们)(?:已经?|刚刚?|也)?(?:修改|更新|添加|"
                             r"删除|修复|实现|重构|移动|重命名|替换|创建|编写|改)了?|"
                             # ... or told in the passive, in the main clause ("The docs have been
                             # updated"; not "works after the vendor has been created").
                             r"^(?:(?!(?:after|before|until|once|when|whenever|if|unless)\b)"
                             r"[\w`'\"./-]+\s){1,8}(?:has|have) (?:now |also )?been "
                             r"(?:updated|changed|added|removed|fixed|implemented|refactored|"
                             r"moved|renamed|replaced|created|modified|deleted|rewritten)\b", -3),
    # A result of the moment: "now passes", "is now fixed", 现在通过了.
    ("works-now", "", r"\bnow (?:passes|pass|works|work|returns|handles|shows|succeeds|compiles|correctly)\b|"
                      r"\b(?:is|are) now\b|现在(?:通过|可以|能|正常)|已经(?:通过|修复|解决)", -2),
    # A status report, also after a label: "Added ...", "Dependencies: Verified that ...".
    ("status", "", r"^(?:[^:\n`]{1,30}: )?(?:added|updated|fixed|removed|changed|created|implemented|renamed|"
                   r"moved|replaced|extracted|refactored|reverted|verified|confirmed)\b|^(?:已经?|刚刚?)(?:更新|添加|"
                   r"修复|删除|修改|创建|实现|重命名|移动|替换|提取|重构|回滚)", -3),
    # An instruction for one task, in a plan or a request: "Add a test ...", "Install ...".
    ("task", "", r"^(?:[^:\n]{1,60}(?::| - | — ) *)?(?:add|update|remove|change|fix|use|revert|reduce|create|move|"
                 r"rename|replace|reference|run|check|write|delete|look|consider|should|log|store|"
                 r"increase|decrease|instantiate|install|set|expand|implement|extract|refactor|"
                 r"wrap|convert|modify|import|initiali[sz]e|configure|adjust|introduce|insert|"
                 r"append|put|define|register|bump|upgrade|migrate|simplify)\b|^(?:添加|更新|删除|修改|使用|"
                 r"运行|检查|编写|创建|移动|重命名|替换|看一下)", -2),
    # A request of the moment: "please take a look".
    ("request", "", r"\b(?:please|can you|could you)\b|请你|帮我", -1),
    # Tests of the moment rather than the project's rules.
    ("about-tests", "", r"\btests?\b|测试", -1),
    # A list intro or heading ("Here's what changed:"); a long one may still carry a claim.
    ("list-intro", "", r"[:：]\s*$", -2),
    # Speculation about what will happen.
    ("future", "", r"\b(?:will|would)\b|\bshould (?:now |still |also |just )?(?:work|be fine|be ok|be okay|pass|"
                   r"succeed|be safe|be enough|be sufficient)\b|将会|将要", -1),
    # About one diff: "this PR", "line 42", "#123", a commit hash.
    ("one-diff", "", r"\b(?:this (?:pr|change|diff|commit)\b|our (?:change|diff|commit|fix)\b|pr #?\d+|"
                     r"line \d+|[0-9a-f]{8,40}\b)|#\d+|这个\s*pr|这次(?:修改|提交)|第\s*\d+\s*行", -2),
    # An incident told as it happens ("The error is occurring because ..."): a cause that holds
    # past today reads in the simple present ("X fails when ..."). Verbs of an event, or the
    # passive of one ("is being retried"); not a state ("we are using Postgres because").
    ("happening-now", "", r"\b(?:is|are|isn't|aren't) (?:not |still |now )?(?:being \w+ed|failing|"
                          r"occurring|happening|breaking|crashing|erroring|throwing|hanging|"
                          r"returning|showing|appearing|working)\b.*\b(?:because|due to)\b|"
                          r"正在(?:失败|发生|报错|崩溃|出错).*(?:因为|由于)", -3),
    # "The fix is to ...", "To fix this, ...": what was done this time, not how the code works.
    ("fix-of-the-day", "", r"^the fix (?:is|was|should|here)\b|^fix\b|^the solution\b|"
                           r"^to (?:fix|solve|resolve|address|work around) (?:this|that|it|these|"
                           r"those|the (?:issue|problem|error|bug|failure|crash))\b"
                           r"(?! for good)(?!.*\b(?:always|never|must)\b)|"  # ... not a rule
                           r"^the (?:simplest|easiest|best|cleanest|right|correct|proper) (?:approach|fix|solution|option|"
                           r"way)\b|^(?:修复方法|解决方法|解决办法|"
                           r"修复方案)是", -3),
    # ... and so is the fix after the finding it ends: "X reads CSV, so the fix is to ...".
    ("so-the-fix", "", r"\bso the fix (?:is|was)\b|所以(?:修复方法|解决方法|解决办法|修复方案)是", -3),
    # "Root cause fix:" is a fix, "the root cause isn't X" rules one out ("wasn't Xing" is one).
    ("not-a-cause", "", r"\broot cause(?: fix\b| (?:isn't|is not|wasn't|was not)\b(?! \w+ing\b)|(?<=not the root cause)\b)|"
                        r"根本原因不是|根因不是|不是根本原因|根因修复|根本原因修复", -3),
    # A guess at why ("might be failing because", "likely because", 可能是因为): not known.
    ("speculation", "", r"\bmight (?:also )?(?:be|have been|not be) (?:\w+ing\b.*\b(?:because|since|due to)\b|because|"
                        r"due to|caused|related|the (?:cause|reason|issue|problem))\b|我怀疑|"
                        r"^(?=.*\b(?:likely|probably|perhaps|possibly|presumably)\b)"
                        r".*\b(?:because|due to|caused by|root cause)\b|"
                        r"^(?=.*(?:可能|也许|或许|大概|估计|多半)).*(?:因为|导致|由于)", -2),
    # The session told back ("after you ran `git pull`", 你刚才运行了); "if you ran" is a rule.
    ("this-session", "", r"\byou(?<!if you)(?<!when you)(?<!whenever you)(?<!unless you)(?<!once you) (?:ran|did|"
                         r"asked|said|changed|added|pushed|merged|rebased|typed|mentioned|wanted|requested|suggested|"
                         r"noticed|pointed out|showed|pasted|saw|tried|started)\b|"
                         r"你(?:刚才|刚刚|之前)(?:运行|执行|提到|贴)了?|你(?:运行|执行|提到|贴)了", -2),
    # ... or what a review or log says ("The feedback says ..."), not "when the log says X".
    ("reported", "", r"\bthe(?<!when the)(?<!if the)(?<!whenever the)(?<!once the)(?<!until the) "
                     r"(?:feedback|review|reviewer|comment|user|error(?: message)?|output|logs?|traceback|"
                     r"stack trace|warning) (?:says|said|mentions|suggests|asks|notes|shows|showed|indicates|"
                     r"indicated|tells|reveals)\b|"
                     r"反馈里?(?:说|提到|建议)|评审意见里?(?:说|提到|建议)|审查意见里?(?:说|提到|建议)", -2),
    # About one test, not the code: "`test_sync_resume` fails ..." (not `TEST_DB_URL`).
    ("one-test", "", r"`test(?:[a-z0-9]{8,}|_[a-z0-9_]{4,})(?:\(\))?` (?:only )?(?:covers|fails|failed|passes|passed|"
                     r"checks|asserts|tests|runs|ran|flakes|times out|timed out)\b", -2),
    # ... or whether one change needs one ("X doesn't need a test"), not a policy.
    ("no-test-needed", "", r"need(?:(?<=doesn't need)|(?<=does not need)|(?<=didn't need)|(?<=did not need)) "
                           r"(?:a|its own|a new|an extra|an additional) (?:unit )?test\b|"
                           r"(?:改动|修改|变更|修复)(?:也|就)?(?:不需要|不用)(?:写|加|新的?)?测试", -2),
    # "instead of" is mostly a description of an edit.
    ("instead", "", r"\binstead of\b|代替|取代", -1),
    # A sentence that opens with a connective leans on the one before.
    ("connective", "", r"^(?:but|so|and|or|also|actually|then|however|basically|right|yes|"
                       r"yeah|ok|okay)\b|^(?:但是|所以|而且|另外|其实|然后|不过|对的|是的)", -1),
)
BASE_SCORE = 2
MIN_SCORE = 4
USER_RULES = frozenset({"user-rule", "user-subject-rule"})  # not marked down for being short
FORM_RULES = frozenset({"base", "reason", "names-code", "from-user"})  # how it is said, not what
TEAM_SIGNAL = "signal-extra"  # the kind of a sentence a team's own SIGNAL pattern picked
REQUEST_KIND = "memory-request"  # the kind of what a memory request asks to record
# Kinds that say a sentence is memory without a rule of kind.
STATED_KINDS = frozenset({TEAM_SIGNAL, REQUEST_KIND})
# Points per further conversation saying a finding, up to EVIDENCE_MAX: ten is the agent's habit.
EVIDENCE_POINTS = 1
EVIDENCE_MAX = 2
# Under SHORT_WIDTH a sentence rarely carries subject, claim and reason; from LONG_WIDTH it usually
# does. A CJK character counts SCORE_WIDE: Chinese takes 2/3 of English's columns.
SHORT_WIDTH, SHORT_POINTS = 60, -2
LONG_WIDTH, LONG_POINTS = 110, 1
SCORE_WIDE = 3

# Length gates in terminal columns: under 20, no rule and its subject; over 300, a paragraph.
# A rule a user asked to keep has its subject in the asking ("note that the CI runs in UTC").
MIN_WIDTH = 20
REQUEST_MIN_WIDTH = 12
MAX_WIDTH = 300

# Default --max-add: a reviewer shown 30 proposals approves in bulk; the rest wait for the next
# run. Three hold more keep per bullet than five on the labelled corpora (bench/README.md).
DEFAULT_MAX_ADD = 3

# Memory file sizes agents accept (see BUDGET_DOES); none is known for others.
BUDGETS: tuple[tuple[str, str, int], ...] = (
    ("Claude Code", "chars", 40_000),
    ("Codex", "bytes", 32 * 1024),
)
BUDGET_FILE = {agent: frozenset(name for name, reader in MEMORY_FILE_NAMES.items() if reader == key)
               for agent, key in (("Claude Code", "claude"), ("Codex", "codex"))}

EXIT_OK = 0
EXIT_PROPOSED = 1  # build --exit-code: something is proposed; lint: a finding
EXIT_ERROR = 2

# Abbreviations after which ". " does not end a sentence.
ABBREVIATIONS = frozenset(
    "e.g i.e vs etc cf approx al fig no mr mrs ms dr st jr sr inc ltd co eq resp"
    " incl esp viz ca".split())

# Wrappers that agents inject into the user's turn; never the user's own words.
INJECTED_TAGS = (
    "system-reminder", "command-name", "command-message", "command-args", "local-command-stdout",
    "local-command-stderr", "local-command-caveat", "bash-input", "bash-stdout", "bash-stderr",
    "environment_context", "environment_details", "user_instructions", "INSTRUCTIONS",
    "user_shell_command", "turn_aborted", "ide_opened_file", "ide_selection", "ide_diagnostics",
    "thinking")
INJECTED_SPAN = Lazy(
    r"<(" + "|".join(INJECTED_TAGS) + r")\b[^>]*>.*?(?:</\1>|\Z)", re.S)
# Whole messages that are the agent's own boilerplate, by their first characters.
COMPACTION_OPENING = "This session is being continued from a previous conversation"
INJECTED_PREFIXES = (
    "Caveat: The messages below were generated by the user while running local commands",
    "[Request interrupted by user", COMPACTION_OPENING, "# AGENTS.md instructions for",
    "This is the Gemini CLI. We are setting up the context", "# TODO LIST UPDATE REQUIRED",
    "[TASK RESUMPTION]")
# Cline tool results that ride in user text blocks: "[read_file for 'x'] Result:".
CLINE_TOOL_RESULT = Lazy(r"^\[[\w-]+(?: for [^\]]*)?\] Result:")
# Cline's older XML tool calls in assistant text; attempt_completion, plan_mode_respond: prose.
CLINE_TOOLS = (
    "read_file", "write_to_file", "replace_in_file", "execute_command", "search_files",
    "list_files", "list_code_definition_names", "browser_action", "use_mcp_tool",
    "access_mcp_resource", "ask_followup_question", "new_task", "load_mcp_documentation",
    "apply_diff", "insert_content", "search_and_replace", "update_todo_list")
CLINE_TOOL_XML = Lazy(r"<(" + "|".join(CLINE_TOOLS) + r")>.*?(?:</\1>|\Z)", re.S)
CLINE_KEEP_XML = Lazy(
    r"</?(?:attempt_completion|result|plan_mode_respond|response|task|feedback|"
    r"user_message|answer|command)>")

# -- safety gates ----------------------------------------------------------------------

def literal_trie(words: Iterable[str]) -> str:
    """Literals as one trie alternation (`a(?:b|c)` for `ab|ac`): one test per first character."""
    tails: dict[str, list[str]] = {}
    for word in sorted(set(words)):
        tails.setdefault(word[0], []).append(word[1:])
    parts = []
    for first, rest in tails.items():
        longer = [r for r in rest if r]
        inner = f"(?:{literal_trie(longer)})" + ("?" if "" in rest else "") if longer else ""
        parts.append(re.escape(first) + inner)
    return "|".join(parts)


# Credentials as gitleaks / detect-secrets find them: a sentence holding one is dropped, unshown.
# Edges are not \b (it misses `_AKIA..._`, `密钥是AKIA...`); an alphabet with `_` or `-` has no end.
_S = r"(?<![A-Za-z0-9])"  # start edge
_E = r"(?![A-Za-z0-9])"  # end edge
# A password by its position: a quoted argument whole (`-N 'four words of it'`), else anything
# to a space or a quote.
_PW = r"(?:\"([^\"\n]+)\"|'([^'\n]+)'|[\"']?([^\s\"'`]+))"
_OPERATORS = r"=|:=|=>|:"
# An option's name in words before its last (`--db-`, `--db_`, `-new` of `-newPassword`, `-TPMAnd`):
# each piece one way only, a word before a dash or a capital, or capitals before a word; none
# given back (a `Phrase` after `Pass` ends the name itself).
_NAME_PIECES = r"(?:[A-Z]?[a-z]+(?:[-_]|(?=[A-Z]))|[A-Z]+(?:[-_]|(?=[A-Z][a-z])))*+"


def assigned(operators: str = _OPERATORS) -> str:
    """A credential's word assigned a value, quoted or not (then to a space, `,` or `;`), maybe
    as a subscript's key (`cfg['password'] = ...`), with a type between (`pass: str = "..."`), a
    string prefix (`b'...'`), a value's type (a registry file's `"Password"=hex:"..."`) or
    escaped quotes."""
    return (r"s?(?![a-z0-9])\\*[\"']?\]?(?:\s*:\s*[A-Za-z_][\w.]*(?:<[^>\n]*>|\[\])?\??(?=\s*=))?"
            r"[ \t]*(?:" + operators + r")[ \t]*\(?[ \t]*"
            r"(?:[bBrRuU]{1,2}(?=[\"'])|\\+(?=\")|[a-z][a-z0-9]{1,7}:(?=[\"']))?"
            r"(?:\"([^\"\n]{6,200})\"|'([^'\n]{6,200})'|([^\s\"',;`]{6,}))")
SECRET_WORDS = ("password", "passwd", "passphrase", "pwd", "pass", "secret", "token", "credential",
                "auth", "bearer", "apikey", "api_key", "api-key", "api key", "access_key",
                "access-key", "accesskey", "access key", "private_key", "private-key", "privatekey",
                "private key", "key")
SECRET_WORDS_ZH = "密码|密钥|秘钥|密匙|私钥|令牌|口令|凭证|凭据|授权码"
# ... and in other languages, as naming words; not a key's word alone, which a fingerprint's
# or a hash's names before it ("l'empreinte de la clé est <sha>").
SECRET_WORDS_ABROAD = ("シークレット|トークン|秘密鍵|アクセスキー|api ?キー|시크릿|토큰|비밀 ?키|액세스 ?키|api ?키|"
                       r"токен\w*|секрет\w*|geheimnis\w*|geheime\w* schlüssel\w*|jeton|segredo|segreto|"
                       r"clé secrète|clave secreta|chave secreta|chiave segreta|gizli anahtar\w*|"
                       r"mã bí mật|khóa bí mật")
# "Public" alone in other languages: before its token it names it ("la client key (publique) est
# <key>"), after it only English's before a noun (BARE_PUBLIC: "al repositorio público" is a place).
PUBLIC_ABROAD = ("(?<![^\\W\\d_])(?:publiques?|públic[oa]s?|pubblic[oaie]|öffentlich\\w*|openbare?|"
                 "публичн\\w*)|公开的?|公開の?|공개\\w*")
# A key that names a record or an entry, not a credential ("Idempotency-Key: <ULID>", "the
# partition key: tenant_<hex>", `cacheKey = ...`): its value is an id, whatever it looks like.
# Not "primary" or "object": Azure names its API keys so.
ID_KEYS = ("cache", "idempotency", "partition", "foreign", "sort", "range", "dedup", "dedupe",
           "deduplication", "composite", "translation")
_NOT_ID_KEY = "".join(f"(?<!{word}[ _-]key)" for word in ID_KEYS)
_NOT_ID_CAMEL_KEY = "".join(f"(?<!{word}Key)(?<!{word.title()}Key)" for word in ID_KEYS)
# "Password" in the languages developers write prose in (Chinese: SECRET_WORDS_ZH).
PASSWORD_NAMES = ("password|passwd|passphrase|passcode|pwd|pw|psk|contraseña|senha|passwort|"
                  "kata laluan|kata sandi|kennwort|wachtwoord|mot de passe|mdp|clave|hasło|heslo|"
                  "parola|şifre|mật khẩu|şifresi|parolasi|пароль|пароля|паролю|паролем|密码|密碼|授权码|"
                  "パスワード|비밀번호|비번|κωδικός|סיסמה|סיסמא|كلمة المرور|كلمة السر|كلمة مرور|"
                  "كلمة سر|رمز عبور|पासवर्ड|รหัสผ่าน|jelszó|jelszava|adgangskoden|adgangskode|"
                  "lösenordet|lösenord|passordet|passord|şifresini|şifreyi|패스프레이즈|암호|कूटशब्द|"
                  "პაროლი|პაროლია|პაროლის|գաղտնաբառ|парола|паролата|пароле|hasła|hasłem|haśle|"
                  "hesla|heslem|κωδικό|κωδικού|পাসওয়ার্ড|கடவுச்சொல்|పాస్వర్డ్|پاس ورڈ|"
                  "գաղտնաբառը|парольная фраза|парольну фразу|"
                  "パスフレーズ|phrase secrète|phrase de passe|unlock phrase|secret phrase|"
                  "diceware phrase|pre-shared-key|pre-shared key|preshared key|"
                  # Finnish and Estonian "is", "on", joined to the word: not a copula in English
                  "salasana on|salasanan on|salasõna on|"
                  "salasana|salasanan|salasanaa|salasanasi|salasõna|slaptažodis|slaptažodį|"
                  "slaptažodžio|geslo|lozinka|lozinku|lozinke|лозинка|лозинку|lykilorð|"
                  "contrasenya|pasahitza|contrasinal|nenosiri|wagwoord|cyfrinair|fjalëkalimi|"
                  "fjalëkalim|şifrə|құпиясөз|нууц үг|ពាក្យសម្ងាត់|ລະຫັດຜ່ານ|စကားဝှက်|මුරපදය|"
                  "પાસવર્ડ|ಪಾಸ್ವರ್ಡ್|പാസ്വേഡ്|ਪਾਸਵਰਡ|የይለፍ ቃል")
# A password's name whose head comes first, as a variable's (`password_for_wifi`, `senha_do_wifi`):
# a preposition and one to three words after it; a name of words in snake_case (`mot_de_passe`).
_OF_THING = r"(?:_(?:for|of|to|de|do|da|du|des|del|di|für|от|для|van|för|na|no)(?:_[^\W_]+){1,3})?"
_NAMES_ONE_WORD = "|".join(w for w in PASSWORD_NAMES.split("|") if " " not in w and len(w) > 3)
# ... as a variable's piece, but Spanish "clave" (a key) and Italian "parola" (a word).
_VARIABLE_NAMES = "|".join(w for w in _NAMES_ONE_WORD.split("|") if w not in ("clave", "parola"))
# ... as a value that stands in for one, in any script (`user:密码@host`); not `pwd` or `psk`,
# which are values too.
_NAMES_STANDING_IN = "|".join([_NAMES_ONE_WORD,
                               *(w for w in PASSWORD_NAMES.split("|") if not w.isascii())])
# What joins a password word to its value in prose, on one line: a verb or colon a few words on
# ("... is", "lautet", "for the VM:"), `=`, a comma before a value with a digit, a particle (は).
# A change's "to" in other languages, its verb before or after the password's word ("ho cambiato
# la password in", "l'ho cambiata in", "сменил пароль на", "đổi mật khẩu thành").
_CHANGE_VERB = (r"(?:cambiat[oa]|cambiad[oa]|cambié|mudei|mudad[oa]|alterei|alterad[oa]|changée?|"
                r"geändert|gesetzt|gewijzigd|veranderd|zmieni\w*|поменял\w*|сменил\w*|изменил\w*|"
                r"змінив\w*|змінил\w*|đổi)")
_CHANGE_TO = r"(?:in|a|en|para|pour|auf|zu|naar|na|на|thành)"
_CHANGED_TO = _CHANGE_VERB + " +" + _CHANGE_TO
_IS = ("is|was|es|ist|est|c'est|c’est|este|er|är|é|è|je|jest|là|lautet|olarak|είναι|היא|הוא|هي|هو|"
       "คือ|adalah|ialah|itu|არის|է|е|є|হলো|হল|yra|ir|és|është|ydy|yw|it's|it’s|that's")
_COPULAS = (_IS + "|stays|stayed|remains|remained|holds|held|bleibt|reste|sigue|to|—|"
            "(?:changed|set|reset|updated|rotated) to|" + _CHANGED_TO)
# Up to twelve words (Vietnamese: syllables) on; in a script without spaces the first is glued
# to the password's word (Thai's "รหัสผ่านของ admin คือ X").
_WORDS_ON = r"[^\x00-\x7f\s:=：，、。]*,?(?: +[^\s:=]+){0,12}?"
_CLAUSE_ON = r"[^\x00-\x7f\s:=：，、。]*,?(?: +[^\s:=;]*[^\s:=;.!?]){0,12}?"  # not past `. ` or `;`
# A password as people choose one: letters, a digit and a sign (`Harbor0!Harbor`, `castl3#0`),
# not a version (`python3.11+`).
_CHOSEN = (r"(?=\S{0,40}[A-Za-z])(?=\S{0,40}\d)(?=\S{0,40}[!#$&*+?@^~])"
           r"(?!\S{0,40}(?:\w\.\d|\+(?!\S)))")
# ... or a word and a number (`Hamburg1999`, `anna0412`), not a tool's name (`sha256`, `base64`):
# only where it is the password ("is still <it>", "set <it> as the password"), for a version or a
# host's name stands beside the word as often (`Windows11 password prompt`, "is on webprod01").
_WORD_NUMBER = r"(?=(?:[a-z]{5,}\d{2,4}|[a-z]{3,4}\d{4})[!?.,;:)]*(?![^\s,;:)]))"
_STILL = ("still|now|currently|again|once again|noch|immer noch|jetzt|maintenant|toujours|encore|"
          "ahora|todavía|"
          "ainda|agora|ancora|adesso|nog|steeds|nadal|teraz|ещё|еще|всё ещё|все еще|теперь|сейчас|"
          "hâlâ|artık|vẫn|giờ|masih|sekarang")
_AS = "as|als|comme|como|come|jako|sebagai|làm|как|" + _IS
_AS_ZH = "设成了?|设为|设置为|改成了?|改为|作为|当作|是|を|을|를"  # "把 <it> 设成了密码"
# ... or set off by commas after a clause about it ("the password you gave me, <it>, works").
_RELATIVE = (r"that|which|you|i|we|que|qui|die|das|den|der|dat|che|który|którą|które|který|"
             r"kterou|котор\w*|ki|yang|mà")
_ASIDE = r" +(?:" + _RELATIVE + r") [^,.;:!?\n]{0,40}, +(?=" + _WORD_NUMBER + ")"
# A password chosen as one long word in small letters ("the wiki password is sunflowerfields",
# `pass = bluebottlecoffee`): at least CHOSEN_WORD letters, not ending as a word that describes
# one does ("configured", "predictable", "somewhere", "plaintext").
CHOSEN_WORD = 9
DESCRIBING_END = Lazy(r"(?:ed|ing|able|ible|ive|ent|ant|ful|ous|ary|ory|ly|al|ic|less|ness|"
                      r"tion|sion|ment|ity|ise|ize|cy|where|thing|text)s?$")
# ... and only right after an English copula (after another's, such a word describes:
# "erforderlich", "obligatoire"), a colon or `=` ("password middleware" names a thing), a few
# words after the password's word in the same sentence.
CHOSEN_WORD_GIVEN = Lazy(r"(?i)^[^.!?;\n]{0,40}(?:(?<![^\W\d_])(?:is|was|it['’]s)"
                         r"(?: (?:still|now|currently|again|once again))?|[:=：是为は])[ \t]*[\"'`]?\Z")
# ... "still" or "now" before one (no copula in Russian): a letter and a digit, or a chosen one.
_STILL_VALUE = r"(?=\S*[a-z])(?=\S*\d)|[a-z]{" + str(CHOSEN_WORD) + "}|" + _CHOSEN
_STILL_JOIN = r" +(?:" + _STILL + r") +(?=" + _STILL_VALUE + r")"
# What opens words that describe a password rather than give it, after "is" or a colon: an
# article or a pronoun, a preposition, an adverb, a verb (an -ed or -able word: DESCRIBING_END);
# in other languages, their articles and prepositions (two make words prose: "diceware").
PHRASE_OPENS = ("a|an|the|this|that|these|those|my|our|your|his|her|its|their|it|one|no|not|"
                "de|la|le|les|los|las|el|del|des|du|un|une|una|um|uma|der|die|das|den|dem|ein|"
                "eine|het|een|van|op|voor|met|para|pela|pelo|por|com|con|per|di|da|nel|na|em|zu|"
                "mit|auf|für|nach|dans|sur|avec|pour|en|il|lo|gli|w|z|do|od|za|в|на|с|по|для|"
                "never|now|still|also|again|only|just|already|always|too|very|so|then|there|here|"
                "set|kept|known|shown|given|written|sent|hidden|in|on|at|for|from|with|by|of|to|"
                "under|inside|into|what|where|whatever|see|ask|use|check|read|enter|type|get|"
                "plain|clear|empty|blank|same|different|case|all|any|some|each|every|more|less|"
                "much|being|both|either|neither|two|three|four|five|six|seven|eight|nine|ten|"
                "eleven|twelve|\\d+")
PHRASE_STOPS = (r"(?:and|but|so|because|since|when|if|which|while|unless|before|after|until|once|"
                r"though|although|y|e|et|und|ed|ou|oder|и)"
                r"(?![\w'’])")  # a conjunction ends the words of a passphrase
PROSE_WORD = Lazy(r"(?:" + PHRASE_OPENS + r"|" + PHRASE_STOPS + ")")  # (fullmatch a word)
_COPULA_COLON = "|".join(f"(?<={word}):[ \t]*"  # a colon a copula opens ("Passwort lautet:")
                         for word in ("lautet", "is", "ist", "est", "es", "was"))
_PASSWORD_JOIN = (r"(?:[`\"]|['’]s)?(?:" + _WORDS_ON + r"(?: +(?:" + _COPULAS + r")"
                  + r"(?:" + _STILL_JOIN + r"| +)|" + _STILL_JOIN
                  + r"| *[:：] *| *(?=[(（]))| *= *|, +(?=[^\s,]*\d)|" + _ASIDE
                  + r"| *[是为為] *|[\u0e00-\u0e7f]*?คือ *|[はがを는은를을가이] *)")  # "password是X"
# ... Thai's copula glued to the words after the password's (รหัสผ่านเราเตอร์คือ X: no spaces)
_SUFFIX = r"(?:-[a-z]{1,4}(?![a-z]))?"  # a word's suffix after a hyphen (`password-nya`)
# A password's word in prose; a Latin letter before it matters to a Latin word only.
PASSWORD_HINTS = PASSWORD_NAMES + "|secret|_pass"  # the pre-filter of rules reading _PASSWORD_WORD
_PASSWORD_WORD = (r"(?:(?:(?<![a-z])|(?![a-z]))(?:" + PASSWORD_NAMES + "|secret)s?" + _SUFFIX
                  # ... or ending a name in code (`adminPassword`, `clientSecret`, `DB_PASS`), not
                  # a call (`getSecret(...)`); the rules read it lower-cased
                  + r"|(?:(?<=[a-z0-9])(?:password|passwd|passphrase|pwd|secret)"
                  r"|(?<=[a-z0-9]_)pass)(?![a-z0-9]| ?[(（]))")
# What no password value holds in prose: text past Latin letters (a CJK sentence glued after
# it), Latin-1's signs and quotes (« » ¿), a multiplication or division sign; the Kelvin sign
# stays out of the range, as (?i) would take `k` for it (and `ı`, `ſ` for `i`, `s`, were they in).
_NOT_LATIN = r"\x80-\xbf\xd7\xf7\u0250-\u2129\u212b-\U0010ffff"
# What may open a prose value: a parenthesis around one with a digit or a sign (not
# "(AuthError)") or around a quote, a link's text (`[pw](url)`); then a quote.
_PROSE_OPEN = r"(?:\((?=[^\s),]*[\d!#$%&*+=?@^~][^\s),]*\)|[`\"'])|\[(?=[^\]\s]+\]\())?[\"'`“「«]?"
# The value: no bracket, no option (a dash only before a digit), six characters or more. In
# another alphabet or kana (`Снегопад_1987`, `사랑해요2023!`) a word and then a digit, or a
# number, a word and a sign (`3645Ծիրան!`): a number before a word is a size (`12-значный`);
# Han characters stay out, as a Chinese sentence runs on without a space.
# Those letters: U+0370 to U+1FFF (Greek, Cyrillic, Arabic, Indic, Georgian ...), kana, Hangul.
_ELSEWHERE = "[\u0370-\u1fff\u3041-\u30ff\uac00-\ud7af]"
# ... a value's characters there: _NOT_LATIN's but those letters (one class, quick to compile).
_VALUE_CHAR = (r"[^\s\"'`”」\]\x80-\xbf\xd7\xf7\u0250-\u036f\u2000-\u2129\u212b-\u3040\u3100-\uabff"
               r"\ud7b0-\U0010ffff]")
_LATIN_VALUE = r"[^\s\"'`”」\]" + _NOT_LATIN + r"]{6,}"
_TOKEN_RUN = r"[^\s\"'`”」\]]*?"  # looking ahead within the value (a cheap class to compile)
_SCRIPT_VALUE = (r"(?=" + _TOKEN_RUN + _ELSEWHERE + _TOKEN_RUN + r"\d|"
                 + _TOKEN_RUN + r"\d" + _TOKEN_RUN + _ELSEWHERE + _TOKEN_RUN + r"[!#$%&*?@^])"
                 + _VALUE_CHAR + r"{6,}(?![\u3400-\u9fff])")
_PROSE_VALUE = (_PROSE_OPEN + r"(?![(\[{<]|-(?!\S*\d))((?![A-Za-z])" + _SCRIPT_VALUE
                + "|" + _LATIN_VALUE + ")")
_NO_VALUE_AFTER = r"(?!\S{0,40}(?:%[0-9a-f]{2}|\\u00|@[\w-]+\.|[/=]))"  # no escape, user@host, path
# A value before its word: no trailing comma or stop; a chosen one a few words from the word
# with no comma between, a word and a number joined to it by "is" or "as".
_VALUE_BEFORE = (r"([^\s\"'`”」\]" + _NOT_LATIN + r"]{5,}"
                 r"[^\s\"'`”」\]" + _NOT_LATIN + r",;.:])")
_GLUED = r" +[^\s,;.!?]*?"  # the word's own prefix (`WLAN-Passwort`)
_FEW_WORDS = r"(?: +[^\s,;.!?]*[^\s,;.!?:]){0,4}" + _GLUED
_LINKED = (r" +(?:" + _AS + r")(?: +[^\s,;.!?]+){0,2}?" + _GLUED
           + r"| *(?:" + _AS_ZH + r")[^\x00-\x7f\s,，;；。、]{0,6}?")
# ... what ends a phrase after a password's word ("as the password."; not "password manager").
_PHRASE_ENDS = r"(?=\s*(?:[,.;:!?)]|$)| +(?:for|of|on|in|to|and|then|when|so)\b)"
# A login's words, by which a `user / password` pair is one ("log in as", "entra con", 登录).
_LOGIN_CJK = "ログイン|サインイン|登录|登入|로그인"
_LOGIN_HINTS = ("login|log in|logged in|logging in|logon|credential|creds|account|sign in|"
                "signed in|signing in|connecte|connexion|entra|inicia sesión|iniciar sesión|accedi|"
                "anmelde|einloggen|zaloguj|заход|войди|логин|вход|đăng nhập|masuk|giriş|inloggen|"
                + _LOGIN_CJK)
_LOGIN = (r"log(?:ged|ging)? ?in(?:to|s)?|logon|credentials?|creds|accounts?|sign(?:ed|ing)? ?in|"
          + _LOGIN_CJK)
# ... in more languages, where "entra" or "masuk" as often opens a task: the value then needs a sign
# or a digit inside it (`Chocolat#42`, `p3rr0v3rd3`), not a version (`node20`, `v1.3`).
_LOGIN_MORE = (r"connecte(?:-toi|z)?|connexion|entra|iniciar? sesión|accedi|anmelde\w*|einloggen"
               r"|zaloguj(?: się)?|заходи|войди|логин|вход|đăng nhập|masuk|giriş yap|inloggen")
# ... and what a login is given "with": after an account (`as app_ro with`, `user pi using`) or a
# verb of logging in or unlocking, a few words before (see login_pair).
_LOGIN_WITH_HINTS = "with |using |mit |avec |con |com "
_LOGIN_WITH = (r"(?:(?<![\w-])(?:as|user|als|comme|como) +[\w.@+-]{2,40}"
               r"|(?<![\w-])(?:unlock(?:s|ed)?|log(?:s|ged)? ?in(?:to)?|sign(?:s|ed)? ?in"
               r"|authenticat(?:es?|ed)|locked|disarms?)(?: +[\w.'-]+){0,3}?)"
               r" +(?:with|using|mit|avec|con|com)")
# A thing's name, which a place gives as often as a password (the "given" check: what a login is
# given "with", a Kubernetes env's value): small letters and digits
# (`ed25519`, `argon2id`), words and a version glued to the last or dotted (`OAuth2`, `Node20`,
# `pg_dump15`, `ansible_core_2.15`; `Lisbon2019` too), small words or numbers joined by hyphens
# (`scram-sha-256`), an image and its tag (`golang:1.22-bookworm`), a key chord (`Ctrl+Shift+P`),
# names joined by `+` (`mTLS+JWT`), a version (`v2.0.1-rc1`), an address (`qa@example.com`). A
# value ending in `*` or `_` is not read (Markdown's emphasis).
NAMED_THING = Lazy(r"(?=[a-z0-9]*[a-z])[a-z0-9]{1,8}"
                   r"|[A-Za-z]+(?:[_-][A-Za-z]+)*(?:\d+(?:\.\d+)*|[_-]\d+(?:\.\d+)+)"
                   r"|[a-z0-9]+(?:-[a-z0-9]+)+|[a-z][\w.-]*:\d[\w.-]*"
                   r"|(?:[A-Z][a-z]{0,6}\+)+(?:[A-Z][A-Za-z0-9]{0,6})?"
                   r"|[A-Za-z]\w*(?:\+[A-Za-z]\w*)+"
                   r"|v?\d+(?:\.\d+)+(?:[-+][\w.]+)?"
                   r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# ... and a pair's password: a sign, or capitals and digits (`Tangerine31`; not `us-east-1`).
_SIGNED_PAIR = r"[^\s\"'@=/]*(?:[!#$%&*+?^_~.]|[A-Z][^\s\"'@]*\d|\d[^\s\"'@]*[A-Z])"
_SIGNED_VALUE = r"(?=[^\s/\"'`]*(?:[!#$%&*+=?@^~_]|\d[a-z]))"
# The pieces of a variable's name after a password's word (`PASS_SMTP`), none an attribute of it
# (`PASSWORD_MIN_LENGTH`, `PASS_TIMEOUT`): those variables hold a setting, not the password.
KEY_ATTRIBUTES = ("file|path|env|name|policy|hash|length|min|max|reset|hint|url|id|command|"
                  "cmd|encryption|algorithm|type|mode|method|format|manager|prompt|expiry|rounds|"
                  "status|state|arn|version|rotation|description|ttl|count|timeout|attempts|"
                  "retries|rate|backend|iterations|digest|provider|store")
_KEY_REST = r"(?:_(?!(?:" + KEY_ATTRIBUTES + r")(?![a-z0-9]))[a-z0-9]+)*"
# A PIN's name (the "pin" rule): capitals (`ADMIN_PIN`, `AT+CPIN`, a SIM's `PUK2`), a camel hump
# (`adminPin`), an option (`--new-pin`), Japanese 暗証番号, a noun after "my" or "her" ("my bank
# pin is"; alone or after "the", "pin" is a verb or a version's as often), or a key whose value is
# quoted or a URL query's (`"pin": "1234"`, `?account_pin=8812`; not `led_pin = 2300`, a GPIO's);
# then `=`, `:`,
# a space, or _DIGITS_JOIN ("the PIN for the kiosk is"); then four to twelve digits, not a year or
# a date (`nightly_pin: 20240115`), ending as _DIGITS_END says. A code that opens a door, a lock
# or a safe is known by its place (CHOSEN PLACES).
_PIN_NAME = (r"(?:(?:(?<![A-Za-z0-9])|(?<=[_+-]))(?:C?PIN|PUK)2?"
             r"(?:-?(?:[Cc]ode|код)|コード|码)?"
             r"|暗証番号|핀번호"
             r"|(?<=[a-z])P(?:IN|in)"
             r"|(?<![\w-])(?:my|your|their|his|her)(?: [a-z]+){0,2} pin(?![\w-])"
             r"|(?<![\w-])--?(?:(?:new|old)-)?pin"
             r"|(?<![\w-])(?:[a-z0-9]+_)*(?:pin|puk(?:_code)?)(?=[\"']?[ \t]*[=:][ \t]*[\"']\d)"
             r"|(?<=[?&])(?:[a-z0-9]+_)*pin(?==\d))")
# A lock's words: what a code or a combination opens (_OPENED).
_LOCKS = ("safe|lock|locker|padlock|vault|cassaforte|lucchetto|armadietto|coffre|cadenas|casier|"
          "tresor|schloss|spind|caja fuerte|candado|taquilla|cofre|cadeado|armário|сейф|замок")
# What names its code in an identifier (`GATE_ENTRY_CODE`, `doorCode`): not an alarm's, an
# installer's or a master code, a fault's, an exit status or a branch's as often.
_ACCESS_WORDS = "door|gate|garage|disarm|duress|keypad|safe"
# A code's word in languages other than English (whose "code" is a program's), a stem that
# inflects ("kodu", "кодът"), and what makes it no secret's after it: a postal, error, country,
# status or bar code, a product's or a promotion's.
_CODE_WORDS = ("código|codic|kod|код|кôд|kód|kode|koodi|κωδικ|קוד|کد|رمز|कोड|কোড|குறியீடு|კოდ|կոդ|"
               "mã|รหัส")
_NOT_CODE_AFTER = (r"(?![ \t]+(?:postal|پستی|بريدي|البريدي|de error|d'erreur|di errore|de erro|"
                   r"pocztowy|ошибки|ошибок|помилки|de área|de país|del país|regional|de barras|"
                   r"a barre|qr|promo\w*|fiscal|de produto|de producto|du produit|del prodotto|"
                   r"iata|iso|sql|http|de estado|d'état|di stato|de status|kesalahan|hatası|lỗi|"
                   r"bưu chính|đơn hàng|sản phẩm|trạng thái))")
# ... and before it, where a language puts the kind first (Turkish "hata kodu", "posta kodu").
_NOT_CODE_BEFORE = "".join(f"(?<!(?i:{kind}) )"
                           for kind in ("hata", "posta", "ürün", "durum", "ülke"))
_CODE_WORD = (_NOT_CODE_BEFORE + r"(?<![^\W\d_])(?i:" + _CODE_WORDS + r")[^\W\d_]{0,3}(?![^\W\d_])"
              + _NOT_CODE_AFTER)
# What a code opens, in the languages developers write prose in ("el código de la caja fuerte",
# "kod do sejfu", "Код от домофона"), inflected too.
_OPENED = (_LOCKS + "|door|gate(?!way)|garage|keypad|puerta|portón|portail|cancello|tür|deur"
           "|drzwi|двер"
           "|brama|garaje|garagem|гараж|домофон|intercom|interphone|citofono|interfono|domofon"
           r"|sejf|kluis|trezor|sim(?![^\W\d_])|telefoon|telefon|телефон|teléfono|téléphone"
           "|telefono"
           "|brán|kapı|kilit|kilid|ajtó|kapu|dörr|dør|portão|portone|tarjeta|karty|картк|карт|card")
# A command line that names a user (`-u sa`, `-Usa`, `--user`; not `mvn -U -P...`) and is not
# mysql's, whose spaced `-p` prompts.
_LOGIN_LINE = (r"(?m)^(?![^\n]*\b(?:mysql|mariadb)\b)"
               r"(?=[^\n]*(?<![\w-])(?:-[uU](?:[ \t=]+[^\s-]|[a-z_])"
               r"|--user(?:name)?[ \t=]+[^\s-]))")
# A value made as passwords are, both cases and a digit, not a path, file, port or setting.
_MADE_VALUE = (r"[\"']?(?=[^\s./:=]*[a-z])(?=[^\s./:=]*[A-Z])(?=[^\s./:=]*[0-9])"
               r"([^\s./:=\"'`]{8,64})[\"']?(?![^\s\"'`])")  # quoted or not
# A colon glued to a value: a code's or a PIN's name's only (`PIN:4829`, `code:4718`, 门禁码：once
# folded), not a time's, a port's, a line's or an id's (`10:30`, `vault:8200`, `lock.rs:1042`).
_GLUED_NAMES = ("code", "pin", "puk", "otp", "passcode", "combo", "combination", "código", "код",
                "kod")
_GLUED_FORMS = dict.fromkeys(form for name in _GLUED_NAMES  # in a fixed order: same bytes
                             for form in (name, name.title(), name.upper()))
_NAME_COLON = ("(?:(?<!:)|" + "|".join(f"(?<={form}:)" for form in _GLUED_FORMS)
               + "|(?<=码:)|(?<=碼:)|(?<=コード:))")
# What joins a number to the name of what it opens: a copula, "as" or a colon, right after the
# name or after a clause saying whose it is ("the PIN for the lobby kiosk is", up to six words;
# in another script any words, a genitive: "Код домофона:"), not after another noun in Latin
# letters ("the PIN lockout is 1800": the lockout's); a PIN's name may also stand right before it.
_DIGITS_JOIN = (r"(?:[ \t]+(?:for|of|on|to|at|in|de|di|do|da|del|della|dos|das|du|der|des|für|fürs|"
                r"von|vom|zum|zur|pour|para|per|van|voor|w|we|k|ke|pro|в|во|у|na|на|для|от|"
                r"لل?\S+|في|من)"
                r"(?:[ \t]+[^\s\"{}\[\]:=,;]+){1,6}"
                r"|(?:[ \t]+[^\s\"{}\[\]:=,;]*[^\x00-\x7f\s\"{}\[\]:=,;：，、。]"
                r"[^\s\"{}\[\]:=,;]*){1,6})?"
                r"(?: +(?:" + _COPULAS + r"|as|opens with|unlocks with) +|'s +"
                r"|[ \t]*[:：](?:[ \t]+|" + _NAME_COLON + r")"
                r"| *[是为はがを는은를을가이] *)")
_PIN_JOIN = r"(?:[\"']?(?:[ \t]*[=:][ \t]*|[ \t]+)|" + _DIGITS_JOIN + ")"
# ... and what ends it: no word after it but a preposition, a conjunction or a time (not "1800
# seconds", "4012 means").
_DIGITS_END = (r"(?![ \t]+(?!(?:and|but|or|so|since|until|now|then|for|to|in|on|at|with|from|by|"
               r"if|as|when|unless|after|before|once|into|followed|last|this|next|right|because|"
               r"yesterday|today|tonight|tomorrow|again|too|also|y|et|und|e|и|و\w*|لا|です|입니다)"
               r"(?![\w-]))[^\W\d_])")
_YEAR = r"(?:19[5-9]\d|20[0-4]\d)"  # a year a PIN, a code's group or a serial's is not
_DIGITS_STOP = r"(?:(?![\w:/-]|\.\d)|(?=です|でした|だ|なので|で[、,]|입니다|이에요|예요|이야|야))"
_PIN_DIGITS = r"(\d{4,12}(?:[*#]+\d*)?|[*#]\d{4,12}[*#]?)" + _DIGITS_STOP  # a keypad's `*`, `#` too
_YEARISH = _YEAR + r"(?:[01]\d[0-3]\d(?:[0-2]\d(?:[0-5]\d)?)?)?(?!\d)"  # a year, a date, its time
_PIN_VALUE = r"[\"'`「«„]?(?!" + _YEARISH + ")" + _PIN_DIGITS
# ... and a lock's: its numbers, one of two digits (`16-38-01`, `36 24 12`; not flags' `0 0 1`).
_COMBINATION = (r"[\"'`]?(?=[\d -]*\d\d)(\d{1,3}(?:[- ]\d{1,3}){2,3}|\d\d?(?:, \d\d?){2,3})"
                r"(?![\w:/-])"
                r"|[\"'`]?(\d(?:-\d){3,5})(?![\w:/-])")  # ... or four digits and more dashed
# CHOSEN PLACES (chosen_secrets). Access codes: a code's digits in a clause that names what
# they open, in the languages of _OPENED, right after a word that gives a value (a copula, a
# colon, "enter", "dial", "with", "code" ...); not after a noun ("locker 214", "port 8443",
# "error 1205": its number), nor before an amount ("300 seconds").
ACCESS_OBJECT = Lazy(r"(?i)(?<![^\W\d_])(?<!_)(?!lock(?:out|ed|ing|file|smith)|safe(?:ly|ty|guard))"
                     r"(?:" + _OPENED + r"|lockbox|key ?safe|alarm|disarm|duress|cage|cabinet|"
                     r"digicode|pinkode|(?:(?<=\bde )|(?<=\bje )|(?<=\bmijn )|(?<=\bjouw )|"
                     r"(?<=\bonze ))pincode|"  # Dutch's "de pincode" (India's is a postal code)
                     r"shed|storage unit|mailbox|phone|intercom|buzzer|allarme|alarme|alarma|"
                     r"alarmanlage|sicherheitscode|schlüsselkasten|sleutelkastje|hek|slot|szafk|"
                     r"сигнализаци|ドア|金庫|ロッカー|门|锁|保险柜|保险箱|현관|도어락|금고|사물함|kasa|"
                     r"dolap|torcode|[^\W\d_]*(?:tür|schloss|tresor)(?:code)?)"  # German compounds
                     r"[^\W\d_]{0,3}(?![^\W\d_])(?!_)"
                     # ... and a name of its code (`GATE_ENTRY_CODE`, `garage_code`, `doorCode`)
                     r"|(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z]))(?i:" + _ACCESS_WORDS + r")(?![a-z])"
                     r"(?i:[_. -]?(?:(?:master|entry|access|unlock)[_. -]?)?code)(?![a-z])")
ACCESS_VALUE = Lazy(r"(?<![\w#$€£%.,/+(\[-])" + _NAME_COLON + r"(?:[\"'`「«„]?"
                    # ... a code as much as a year after "is" or ":", but a year after "in"
                    r"(?:(?=" + _YEARISH + r")(?<!\bin )(?<!\binto )|(?!" + _YEARISH + "))"
                    + _PIN_DIGITS + "|" + _COMBINATION + ")"
                    + _DIGITS_END + r"(?![ \t]*\d)")  # all of a run of numbers ("5 10 20 40 ms")
_GIVING = (r"(?i)(?:[:：=]|'s|(?<![^\W\d_])(?:" + _COPULAS + r"|are|were|be|with|in|into|"
           r"enter|dial|punch|press|type|buzz|use|uses|using|code|combo|combination|pin|"
           r"passcode|digits|es|era|ist|sind|(?:" + _CODE_WORDS + "|" + PASSWORD_NAMES
           + r")[^\W\d_]{0,3}")
ACCESS_GIVEN = Lazy(_GIVING + r")|[是为は는은가이야])[ \t]*[\"'`«„「]?\Z")
CLAUSE_END_MARK = Lazy(r"[.!?;\n。！？；](?!\d)")
GIVEN_REACH = 24  # characters before a value that its giving word (and a quote) takes at most
# ... and a clause of an error's, a status's or an event's code ("Код ошибки домофона: 4012",
# "the PLC raises alarm code 4711") is none; nor is an identifier's (`lock_timeout_code: 1500`).
ACCESS_NOT = Lazy(r"(?i)(?<![^\W\d_])(?:error|fault|status|ошибк|помилк|fehler|erreur|errore|erro|"
                  r"błęd|hata|fout|(?:rais|trigger|throw|emit|report)[^\W\d_]*)|错误|エラー|오류")
# Security answers: a name, a place or a word, capitalised or quoted, given right after "is",
# a colon, "I put" or "answer" in a clause naming a security question or what one asks (a
# mother's maiden name, a first pet); not a fake one a test uses.
ANSWER_TOPIC = Lazy(r"(?i)(?:security|secret|recovery|memorable|verification|challenge)[ -]"
                    r"(?:questions?|answers?|words?|dates?|places?|phrases?)|maiden name|"
                    r"(?:first|childhood) (?:pet|car|school|job|teacher|concert)|"
                    r"(?:street|city|town)[^.;\n]{0,30}gr[eo]w up|city of birth|"
                    r"pregunta (?:de seguridad|secreta)|respuesta secreta|nombre de soltera|"
                    r"sicherheitsfrage|geheimfrage|mädchenname|geburtsname|question secrète|"
                    r"question de sécurité|nom de jeune fille|domanda (?:di sicurezza|segreta)|"
                    r"cognome da nubile|pergunta (?:de segurança|secreta)|nome de solteira|"
                    r"beveiligingsvraag|pytanie (?:pomocnicze|bezpieczeństwa)|контрольн\w+ вопрос|"
                    r"секретн\w+ вопрос|девичья фамилия|güvenlik sorusu|秘密の質問|安全问题|密保问题|"
                    r"보안 질문")
# ... a name or place as typed (capitalised), a word with a digit, or anything quoted.
ANSWER_VALUE = Lazy(r"[\"'“«„「]([^\"'”»“」\n]{2,40})[\"'”»“」]|"
                    r"(?<![\w'-])((?=[^\W\d_])[^\W_a-z][\w'-]*(?:[ -][^\W\d_a-z][\w'-]*){0,2}"
                    r"|[^\W\d_]+\d+)(?![\w'-])")
ANSWER_GIVEN = Lazy(r"(?i)(?:[:：=—]|->|→|(?<![^\W\d_])(?:is|was|are|answer(?:ed)?(?: with)?|put|"
                    r"used|typed|entered|chose|say|now|(?:changed|set|reset)(?: it)? to|it's|"
                    r"es|est|ist|war|è|é|era|это|mis|messo|"
                    r"respuesta|réponse|antwort|risposta|resposta|ответ|cevap)|[是为は는은이가])"
                    r"[ \t]*[\"'“«„「]?\Z")
ANSWER_NOT = Lazy(r"(?i)\b(?:fake|dummy|example|placeholder|fixture|test data|e\.g\.)\b")
# ... a pre-filter: words one of ANSWER_TOPIC's holds, in lower case (most text has none).
ANSWER_HINT = Lazy("security|secret|recovery|memorable|verification|challenge|maiden|first|"
                   "childhood|grew|grow|birth|pregunta|respuesta|soltera|frage|geburtsname|"
                   "mädchenname|question|jeune fille|domanda|nubile|pergunta|solteira|vraag|"
                   "pytanie|вопрос|фамилия|sorusu|質問|问题|보안")
# One-time codes: a login's code sent by text or an app, a card's security code (three digits
# and more), given as access codes are, the code's name giving it too ("CVV 837").
_ONE_TIME_LEADS = ("text", "one-time", "one time", "verification", "confirmation", "login",
                   "sign-in", "signin", "sign in", "device", "auth")
_ONE_TIME_KINDS = ("code", "pin", "passcode", "number", "token")
_ONE_TIME_NAMES = ("sms", "texted", "2fa", "mfa", "otp", "totp", "authenticator", "cvv", "cvc",
                   "csc", "código de verificación", "código de verificação",
                   "código de confirmación", "código de confirmação", "code de vérification",
                   "code de confirmation",
                   "bestätigungscode", "verifizierungscode", "код подтверждения", "код из смс",
                   "codice di verifica", "codice otp", "kod weryfikacyjny", "kod sms",
                   "doğrulama kodu", "mã xác nhận", "mã xác minh", "mã otp", "verificatiecode")
_ONE_TIME_CJK = ("验证码", "驗證碼", "認証コード", "確認コード", "ワンタイムパスワード", "인증번호", "인증코드",
                 "인증 코드")
ONE_TIME_OBJECT = Lazy(r"(?i)(?<![^\W\d_])(?:(?:" + "|".join(_ONE_TIME_LEADS) + r")[ -]?(?:"
                       + "|".join(_ONE_TIME_KINDS) + r")s?|" + "|".join(_ONE_TIME_NAMES)
                       + r")(?![^\W\d_])|" + "|".join(_ONE_TIME_CJK))
# ... a pre-filter: the same names as literals (most text has none).
ONE_TIME_HINT = Lazy(literal_trie([lead + join + kind for lead in _ONE_TIME_LEADS
                                   for join in ("", " ", "-") for kind in _ONE_TIME_KINDS]
                                  + [*_ONE_TIME_NAMES, *_ONE_TIME_CJK]))
# ... its value: a year's digits too ("my 2FA code: 20240115"), but after "in".
ONE_TIME_VALUE = Lazy(r"(?<![A-Za-z0-9_#$€£%.,/+(\[-])" + _NAME_COLON + r"[\"'`「«„]?"
                      r"(?:(?=" + _YEARISH + r")(?<!\bin )(?<!\binto )|(?!" + _YEARISH + r"))"
                      r"(\d{3,8}|\d{3}[ -]\d{3}|\d\d \d\d \d\d)(?!%)"
                      + _DIGITS_STOP + _DIGITS_END + r"(?![ \t]*\d)")
ONE_TIME_GIVEN = Lazy(_GIVING + r"|otp|cvv2?|cvc2?|csc|shows|says|sent|texted)|[是为は는은가이야：])"
                      r"[ \t]*[\"'`«„「]?\Z")
# Each place: the kind it is counted as, a pre-filter of its words (None: its value is rare
# enough), the value, what the clause names, what stands right before the value, what makes
# the clause another's.
CHOSEN_PLACES = (("pin", None, ACCESS_VALUE, ACCESS_OBJECT, ACCESS_GIVEN, ACCESS_NOT),
                 ("one_time_code", ONE_TIME_HINT, ONE_TIME_VALUE, ONE_TIME_OBJECT, ONE_TIME_GIVEN,
                  ACCESS_NOT),
                 ("security_answer", ANSWER_HINT, ANSWER_VALUE, ANSWER_TOPIC, ANSWER_GIVEN,
                  ANSWER_NOT))
# A group of a recovery code: capitals and digits, or small letters with a digit.
_CODE_GROUP = r"(?:[A-Z0-9]{4,}|(?=[a-z]*\d)[a-z0-9]{4,})"
_CODE_GROUPS = _CODE_GROUP + r"(?:[ -]" + _CODE_GROUP + r")*"  # ... and a list of them
# A recovery phrase's names (the seed_phrase rule), in some of the languages of PASSWORD_NAMES:
# no bare "seed", "phrase" or "restore" (a random seed, a phrase query, a restore's steps).
_SEED_NAMES = (r"(?:seed|recovery|backup|restore|wallet|secret)[ _-]?(?:phrase|words)|mnemonic|"
               r"(?:wallet|recovery|backup)[ _-]?seed|"
               r"phrase:[ \t]*(?=\n)|"  # a bare phrase's words on the next line
               r"wiederherstellungsphrase|frase semilla|frase de recupera|palavras de recupera|"
               r"phrase de récupération|mots de récupération|parole della seed|frase di recupero|"
               r"фраз[ау] восстановления|сид-фраз|мнемони|助记词|助記詞|シードフレーズ|"
               r"リカバリーフレーズ|ニーモニック|니모닉|시드 문구|복구 문구|복구 구문|"
               r"復元(?:用)?フレーズ|バックアップフレーズ|种子短语|种子词|恢复短语|助记短语|復原短語|"
               r"시드 단어|복구 단어|palabras semilla|frase de respaldo|fraza odzyskiwania|"
               r"kurtarma ifadesi|cụm từ khôi phục|frasa pemulihan")
_SEED_HINTS = ("phrase|words|mnemonic|frase|palavras|mots|parole|фраз|мнемони|助记词|助記詞|"
               "フレーズ|ニーモニック|니모닉|문구|구문|seed|短语|种子词|短語|단어|semilla|fraza|"
               "ifadesi|cụm từ|frasa")
_SEED_JOIN = (r"(?:[:=：—–\"'`“„「«]|(?<![a-z])(?:" + _IS + r"|are|as|to|sind|sont|son|são|sono)"
              r"(?![a-z])|[是为は는은])")
# Words of a sentence that BIP39's list lacks: a run of twelve words holding one is prose.
_NOT_SEED_WORDS = ("the|and|are|for|with|from|was|were|our|them|their|its|has|been|than|not|but|"
                   "your|these|those|should|each|using|runs|new|which|while|who|how|why|here|had|"
                   "does|did|done|get|got|makes|made|most|some|after|through|against|being|both|"
                   "down|further|too|out|per|via|yet")
_SEED_LETTER = "[a-zà-öø-ÿ\u0100-\u017f]"  # (accented too: BIP39's Spanish, French, Czech lists)
_SEED_PLAIN = r"(?!(?:" + _NOT_SEED_WORDS + r")(?![a-z]))" + _SEED_LETTER + "{3,9}"  # (Italian: 9)
CJK_WORD = r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7a3]{1,8}"
# ... and under a phrase's name, a word in any script: accented, kana, hangul, one hanzi (BIP39's
# lists in Spanish, Japanese, Korean, Chinese, written decomposed: secret_view composes them),
# numbered too (`1) word`).
_SEED_WORD = r"(?:\d{1,2}[.):]\s*)?(?:" + _SEED_PLAIN \
    + r"|(?=[a-z]*[^\x00-\x7f])[^\W\d_]{3,8}|" + CJK_WORD + r")"
# ... and a passphrase's word, longer, accented too
_PHRASE_WORD = r"(?!(?:" + _NOT_SEED_WORDS + r")(?![a-z]))" \
    r"[a-zà-öø-ÿ\u0100-\u017f\u0430-\u044f\u0451]{3,12}"
# ... after a passphrase's name in the languages the probes wrote, or a password's.
PASSPHRASE_NAMES = ("pass ?phrases?|passwor[dt]|secret phrase|"
                    "frase (?:secreta|segreta|de contraseña)|phrase de passe|phrase secrète|"
                    "passwortsatz|wachtzin|fraza hasła|кодовая фраза|парольная фраза|senha|"
                    "contraseña")
# A recovery phrase by its form, whatever names it: 12 to 33 such words (BIP39's 12 to 24,
# SLIP-39's 20 and 33, Monero's and Algorand's 25) in small letters, spaced (commas part a
# list's), no word after them, and before them (SEED_LEAD) a colon, a quote, a bracket, a dash,
# a path's slash (_LEAD_SIGN) or "is"; in a sentence naming no wallet (WALLET_WORD), SEED_ALONE of
# them. A plain look at twelve such words (SEED_LOOK) rules most texts out; the pattern is tried
# right after each lead, and opens with the character before the words. A bare "seed:" is a
# wallet's word and the colon a lead: the same rule.
_NUMBERED = r"(?:\d{1,2}[.)] )?"  # a list's number before each word (`1. word 2. word`, `1) word`)
_TWELVE = (r"(?<![^\W_])" + _NUMBERED + _SEED_LETTER + "{3,9}(?: " + _NUMBERED + _SEED_LETTER
           + "{3,9}){11}")
_LEAD_SIGN = "[:=：—–\"'`“„「«(（\\[/]"
# ... and in kana, hanzi or hangul, twelve words (CJK_WORD) spaced after a lead's character,
# with a word after them or none; where no wallet is named, SEED_ALONE of them (a poem's line is
# spaced so for a slide: "两 个 黄 鹂 鸣 翠 柳 ...").
SEED_CJK = Lazy(_LEAD_SIGN + r"[ \t]*(" + CJK_WORD + r"(?: " + CJK_WORD + r"){11,32})(?![\w-])")
SEED_LOOK = Lazy(_TWELVE + "|" + CJK_WORD + "(?: " + CJK_WORD + "){11}")
SEED_RUN = Lazy(r"(?:\s|" + _LEAD_SIGN + ")(?=" + _TWELVE + ")"
                r"(" + _NUMBERED + _SEED_PLAIN + r"(?: " + _NUMBERED + _SEED_PLAIN + r"){11,32})"
                r"(?![\w-])(?=( +[A-Za-z])?)")
STOP_AFTER = Lazy(r" +" + PHRASE_STOPS)
# ... and with a word after them, under a recovery phrase's name earlier in its sentence ("Seed
# phrase of the test wallet, keep it in the safe: <words> by hand ...").
SEED_NAMED = Lazy(r"(?i)(?:" + _SEED_NAMES + r")[^\n.!?。！？]*\Z")
SEED_REACH = 80  # characters between the name and the words, at most
SEED_ALONE = 18  # words of a run that are a phrase where no wallet is named (a list has commas)
# A space a link's query encodes between two words (`animal%20atom`, `animal+atom`): read as one
# only for a recovery phrase under its own name (`seed=`, `mnemonic=`), as a search query's words
# are prose, not a password.
LINK_SPACE = Lazy(r"(?<=[a-z])(?:%20|\+)(?=[a-z])")
# A key of three words or more joined by `_` before its value (`"mật_khẩu_cơ_sở_dữ_liệu": "..."`,
# `?wps_pin_on_the_label=...`): the phrase and colon a sentence would write (the same length).
KEY_PHRASE = Lazy(r"(?<![\w-])([^\W\d_]+(?:_[^\W_]+){2,})[\"']?[ \t]*(?::(?!:)|=(?!=))")
# ... but a setting of one (`user_password_hash`, `ACCESS_CODE_TTL_MS`): an attribute or a unit
SETTING_PIECES = frozenset(KEY_ATTRIBUTES.split("|")) | {"ms", "sec", "secs", "seconds", "minutes",
                                                         "hours", "days", "bytes", "size", "limit"}
AS_COLON = str.maketrans({"=": ":", "\"": " ", "'": " "})  # ... its sign, a colon, as prose's
KEY_REACH = 200  # characters after such a key read with it: its value (a token is never cut)
SPACE = Lazy(r"\s")
SEED_KEY = Lazy(r"(?i)(?:seed|phrase|mnemonic|words|recovery|backup|srp)[\w.-]*(?:=|%3D)\Z")
# ... in a sentence about a wallet (a list of twelve fruits, tags or commands is not), or about
# what words restore or log in to ("restore with: <words>", "用这十二个字恢复").
WALLET_WORD = Lazy(r"wallet|seed|mnemonic|bip-?39|crypto|bitcoin|ethereum|ledger|metamask|кошел|"
                   r"гаманц|"
                   r"cüzdan|محفظ|वॉलेट|portefeuille|cartera|carteira|portafoglio|portfel|peněžen|"
                   r"tárc|πορτοφόλ|钱包|錢包|ウォレット|지갑|\bví\b|dompet|plånbok|lommebok|"
                   r"lompakko|portofel|novčanik|ארנק|کیف پول|กระเป๋า|"
                   r"restore with|recover with|log in with|\d+ words|恢复|恢復|復元|복원")
SEED_LEAD = Lazy(_LEAD_SIGN + r"[ \t]*|(?<![^\W\d_])(?:" + _IS + r"|are|sind|sont|son|são|sono"
                 r"|reads|says|diz|dice|dit|sagt|lautet"  # ... or what a backup's paper says
                 r"|\d+ words)"  # ... or how many ("the 13 words <words>")
                 r"[ \t]+")
# Commands that take a password after an option, and the option: a command is named by its start
# (`ldap`: ldapsearch), glued only for mysql and 7z (`mysql -p app` prompts).
PASSWORD_FLAGS: tuple[tuple[str, str], ...] = (
    ("mysql|mariadb|7z", r"-p"), ("login|sshpass|mongo|mcrcon|cqlsh", r"-p\s*"),
    ("redis-cli", r"-a\s*"), ("curl", r"-u\s*[^\s:]+:|--user\s+[^\s:]+:"),
    ("sqlcmd|bcp|osql|zip|unzip|mosquitto_|ipmitool", r"-P\s*"),
    ("ldap", r"-w\s*"), ("rar", r"-hp"),
    ("pscp|plink|psftp", r"-pw\s+"), ("ssh-keygen", r"-[NP]\s*"), ("openssl", r"-k\s+|pass:"),
    ("smbclient|rpcclient", r"-U\s*[^\s%]+%"), ("http", r"-a\s*[^\s:]+:"),
    ("machine|default|nmcli", r"password\s+"), ("aws", r"aws_secret_access_key\s+"),
    ("htpasswd|mosquitto_passwd", r"-\w*(?:n\w*b|b\w*n)\w*(?:\s+-\w+)*\s+\S+\s+"
                 r"|-\w*b\w*(?:\s+-\w+)*(?:\s+\S+){2}\s+"),
    ("npm|yarn|pnpm", r"\S*:_(?:auth|authToken|password)\s+"), ("lftp", r"-u\s*[^\s,]+,"),
    ("requirepass|masterauth", ""), ("identified|IDENTIFIED", r"(?i:by)\s+"),
    ("rabbitmqctl", r"(?:add_user|change_password) \S+ "),
    ("net", r"(?:use\s[^\n]{0,200}?(?i:/user:)\S+|user\s+[^\s/]+|use\s+(?:[A-Za-z]:\s+)?\\\\\S+)\s+"
            r"(?!/|\d?[<>]|\*(?![^\s`'\"]))"),  # `*`: a prompt; `>nul`: a redirection
    ("sendemail", r"-xp\s+"),
    ("ConvertTo-SecureString", r"(?:-String\s+)?"), ("xfreerdp|wlfreerdp", r"/p:"),
    ("username|enable", r"(?:secret|password) [05] |secret (?![05] )"),
    ("snmp-server", r"community\s+"),
    ("altool|notarytool", r"-p\s*|--password\s+"),
    ("snmp", r"-[cAX]\s*"), ("cache_peer", r"login=[^\s:]+:"), ("stats", r"auth\s+[^\s:]+:"),
    ("add-user", r"-p\s*"), ("schtasks", r"(?i:/RP)\s+"), ("wpa_passphrase", r"\S+\s+"),
    ("bundle config", r"(?:--(?:global|local)\s+)?[\w-]+(?:\.[\w-]+)+\s+[^\s:]+:"),  # host user:pw
    ("security add-generic-password|security add-internet-password", r"-w\s*"),  # macOS keychains
    ("security create-keychain|security unlock-keychain", r"-p\s*"),
)
_TOOL_FLAG = "|".join(f"(?:{tools})[\\w-]*+(?:[^\\n|;&]|\\\\\n){{0,400}}?(?<=\\s)"
                      f"(?:[\"'](?=-)(?:{opt})(?=[^\\s\"'])|(?:{opt}))"
                      for tools, opt in PASSWORD_FLAGS)


def issued(*forms: str) -> str:
    """Token formats `PREFIX REST` as one pattern, each opening with its literal and checking its
    start edge after it: the engine searches for the literal, not the edge."""
    parts = []
    for form in forms:
        prefix, rest = form.split(" ", 1)
        literal = re.escape(prefix)
        parts.append(f"{literal}(?<![A-Za-z0-9]{literal}){rest}")
    return "(?:" + "|".join(parts) + ")" + _E


SECRET_RULES: tuple[tuple[str, str, str, str], ...] = (
    # (kind, pre-filter, pattern, check). A pre-filter literal must occur in the lower-cased text
    # for the pattern to run; a (?i) pattern reads that text (faster than re.I). The first group
    # that took part is the value the check judges (credible); "" means the prefix is proof.
    # PEM, SSH2 and PuTTY key files, to their end or the message's (with no line of key, none).
    ("private_key", "private key|putty-user-key-file",
     r"-{4,5} ?BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)? ?-{4,5}.*?(?:-{4,5} ?END[ A-Z0-9]*PRIVATE KEY"
     r"(?: BLOCK)? ?-{4,5}|\Z)|PuTTY-User-Key-File-\d+:.*?(?:Private-MAC: *[0-9a-fA-F]+|\Z)",
     "body"),
    # A wallet's recovery phrase: 12 to 33 short words (BIP39's have three to nine letters) given
    # right after its name or a few words on after a copula, a colon, a dash or a quote; spaced,
    # wrapped, between commas or numbered (`1) word`), with no word of a sentence among them
    # (_NOT_SEED_WORDS) and not mostly words of three letters (the "seed" check).
    ("seed_phrase", _SEED_HINTS,
     r"(?i)(?:" + _SEED_NAMES + r")(?:[^\n]{0,%d}?" % SEED_REACH + _SEED_JOIN + r")?"
     r"[\s>\"'`“„「«(（]*(" + _SEED_WORD
     + r"(?:(?:\s*,\s*|\s+)" + _SEED_WORD + r"){11,32})(?![\w-])", "seed"),
    # AWS access key ids (the secret access key has no prefix: generic rules).
    ("aws_access_key", r"akia|asia|abia|acca|a3t", _S + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}" + _E, ""),
    ("github_token", r"ghp_|gho_|ghu_|ghs_|ghr_|github_pat_",
     _S + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})", ""),
    ("gitlab_token", r"glpat-|gldt-|glrt-|glptt-|glft-|glimt-|glagent-|glsoat-|glcbt-|gloas-|glffct-|gr1348941",
     _S + r"(?:gl(?:pat|dt|rt|ptt|ft|imt|agent|soat|cbt|oas|ffct)-|GR1348941)[A-Za-z0-9_-]{20,}", ""),
    ("slack_token", "xox|xapp-|hooks.slack.com",
     _S + r"(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})|"
     r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}", ""),
    ("anthropic_key", r"sk-ant-", _S + r"sk-ant-[a-z]{3,6}\d{2}-[A-Za-z0-9_-]{20,}", ""),
    # `sk-` not after a letter, digit or `-`, so `cask-point-at-...` and `sk-learn` pass.
    ("openai_key", r"sk-", r"(?<![A-Za-z0-9-])sk-(?:proj-|svcacct-|admin-)?([A-Za-z0-9_-]{20,})", "random"),
    ("google_api_key", r"aiza", _S + r"AIza[0-9A-Za-z_-]{35}", ""),
    ("google_oauth_secret", r"gocspx-", _S + r"GOCSPX-[A-Za-z0-9_-]{28}", ""),
    ("stripe_key", r"_live_|_test_|_prod_|whsec_", _S + r"(?:(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{16,}|whsec_[A-Za-z0-9+/=]{24,})", ""),
    ("npm_token", r"npm_", _S + r"npm_[A-Za-z0-9]{36}" + _E, ""),
    # A PyPI token is a macaroon, base64 of a header naming pypi.org or test.pypi.org.
    ("pypi_token", r"pypi-ag", _S + r"pypi-Ag[A-Za-z0-9_-]{50,}", ""),
    ("dockerhub_token", r"dckr_", _S + r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{24,}", ""),
    ("huggingface_token", r"hf_|api_org_", _S + r"(?:hf|api_org)_[A-Za-z0-9]{34}" + _E, ""),
    # Twilio API key sid; issued() since "sk" admits it to most messages.
    ("twilio_key", r"sk", issued(r"SK [0-9a-fA-F]{32}"), ""),
    ("sendgrid_key", "sg.", _S + r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}", ""),
    # Mailgun's older `key-` keys (the newer ones are hex: generic rules).
    ("mailgun_key", r"key-", _S + r"key-[0-9a-f]{32}" + _E, ""),
    ("shopify_token", r"shpat_|shpss_|shpca_|shppa_", _S + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _E, ""),
    # A Discord bot token is base64(user id).base64(time).HMAC; a webhook's is in its URL.
    ("discord_token", "discord",
     _S + r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}|"
     r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}", ""),
    ("telegram_bot_token", ":a", r"(?<![0-9])\d{5,16}:A[A-Za-z0-9_-]{34}", ""),
    ("digitalocean_token", r"dop_v1_|doo_v1_|dor_v1_", _S + r"do[opr]_v1_[a-f0-9]{64}", ""),
    ("linear_key", r"lin_api_", _S + r"lin_api_[A-Za-z0-9]{40}", ""),
    ("sentry_token", r"sntrys_|sntryu_", _S + r"sntry[su]_[A-Za-z0-9_=+/-]{40,}", ""),
    ("databricks_token", r"dapi", _S + r"dapi[a-f0-9]{32}(?:-\d)?" + _E, ""),
    ("vault_token", "hvs.|hvb.", _S + r"hv[sb]\.[A-Za-z0-9_-]{24,}", ""),
    ("postman_key", r"pmak-", _S + r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", ""),
    # A legacy Grafana API key is base64 JSON opening `{"k":"`.
    ("grafana_token", r"glsa_|glc_|eyjrijoi",
     _S + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2}|eyJrIjoi[A-Za-z0-9+/]{40,}={0,3})", ""),
    ("newrelic_key", r"nrak-", _S + r"NRAK-[A-Z0-9]{27}", ""),
    ("age_secret_key", r"age-secret-key-1", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", ""),
    ("square_token", r"sq0atp-|sq0csp-|eaaa",
     _S + r"(?:sq0atp-[0-9A-Za-z_-]{22}|sq0csp-[0-9A-Za-z_-]{43}|EAAA[A-Za-z0-9_-]{22,})", ""),
    ("planetscale_token", r"pscale_", _S + r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,}", ""),
    ("doppler_token", "dp.", _S + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}", ""),
    ("pulumi_token", r"pul-", _S + r"pul-[a-f0-9]{40}" + _E, ""),
    ("supabase_token", r"sbp_", _S + r"sbp_[a-f0-9]{40}" + _E, ""),
    ("atlassian_token", r"atatt", _S + r"ATATT3[A-Za-z0-9_=-]{60,}", ""),
    # More issuers' formats, as gitleaks matches them. A pre-filter literal opening with a
    # letter no other opens with would slow SECRET_HINT: `co-` admits `ico-`.
    ("notion_token", "ntn_", issued(r"ntn_ [0-9]{11}[A-Za-z0-9]{35}"), ""),
    ("perplexity_key", "pplx-", issued(r"pplx- [A-Za-z0-9]{48}"), ""),
    ("heroku_key", "hrku-aa", issued(r"HRKU-AA [A-Za-z0-9_-]{58}"), ""),
    ("openshift_token", "sha256~", issued(r"sha256~ [A-Za-z0-9_-]{43}"), ""),
    ("sourcegraph_token", "sgp_", issued(r"sgp_ (?:[A-Fa-f0-9]{16}_|local_)?[A-Fa-f0-9]{40}"), ""),
    # Terraform Cloud: 14 characters, `.atlasv1.`, the rest: found from its literal.
    ("terraform_token", "atlasv1.", issued(r"atlasv1. [A-Za-z0-9_=-]{60,70}"), ""),
    ("alibaba_key", "ltai", issued(r"LTAI [A-Za-z0-9]{20}"), ""),
    ("artifactory_key", "akcp|cmvmdgtu", issued(r"AKCp [A-Za-z0-9]{69}", r"cmVmdGtu [A-Za-z0-9]{56}"), ""),
    ("bedrock_key", "absk|bedrock-api-key-",
     issued(r"ABSK [A-Za-z0-9+/]{109,269}={0,2}", r"bedrock-api-key- [A-Za-z0-9+/]{20,}={0,2}"), ""),
    ("clojars_token", "clojars_", issued(r"CLOJARS_ [a-z0-9]{60}"), ""),
    ("dynatrace_token", "dt0c01.", issued(r"dt0c01. [A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"), ""),
    ("easypost_key", "ezak|eztk", issued(r"EZAK [A-Za-z0-9]{54}", r"EZTK [A-Za-z0-9]{54}"), ""),
    ("flutterwave_key", "lwseck|lwpubk",
     issued(r"FLWSECK (?:_TEST)?-(?:[a-hA-H0-9]{32}-X|[a-hA-H0-9]{12})", r"FLWPUBK (?:_TEST)?-[a-hA-H0-9]{32}-X"), ""),
    ("flyio_token", "fo1_|fm1|fm2_",
     issued(r"fo1_ [A-Za-z0-9_-]{43}", r"fm1 [ar]_[A-Za-z0-9+/]{100,}={0,3}", r"fm2_ [A-Za-z0-9+/]{100,}={0,3}"), ""),
    ("frameio_token", "fio-u-", issued(r"fio-u- [A-Za-z0-9_=-]{64}"), ""),
    ("airtable_token", "pat", issued(r"pat [A-Za-z0-9]{14}\.[a-f0-9]{64}"), ""),
    ("harness_key", "pat.|sat.",
     issued(r"pat. [A-Za-z0-9_-]{22}\.[0-9a-f]{24}\.[0-9A-Za-z]{20}", r"sat. [A-Za-z0-9_-]{22}\.[0-9a-f]{24}\.[0-9A-Za-z]{20}"), ""),
    ("infracost_token", "co-", issued(r"ico- [A-Za-z0-9]{32}"), ""),
    ("intra42_secret", "s-s4t2ud-|s-s4t2af-", issued(r"s-s4t2ud- [a-f0-9]{64}", r"s-s4t2af- [a-f0-9]{64}"), ""),
    ("octopus_key", "api-", issued(r"API- [A-Z0-9]{26}"), ""),
    ("prefect_token", "pnu_", issued(r"pnu_ [A-Za-z0-9]{36}"), ""),
    ("readme_key", "dme_", issued(r"rdme_ [a-z0-9]{70}"), ""),
    ("rubygems_key", "gems_", issued(r"rubygems_ [a-f0-9]{48}"), ""),
    ("scalingo_token", "tk-us-", issued(r"tk-us- [A-Za-z0-9_-]{48}"), ""),
    ("brevo_key", "xkeysib-", issued(r"xkeysib- [a-f0-9]{64}-[A-Za-z0-9]{16}"), ""),
    ("shippo_token", "shippo_", issued(r"shippo_ (?:live|test)_[a-fA-F0-9]{40}"), ""),
    ("settlemint_token", "sm_", issued(r"sm_ (?:pat|aat|sat)_[A-Za-z0-9]{16}"), ""),
    ("adobe_secret", "p8e-", issued(r"p8e- [A-Za-z0-9]{32}"), ""),
    ("cloudflare_origin_key", "v1.0-", issued(r"v1.0- [a-f0-9]{24}-[a-f0-9]{146}"), ""),
    ("duffel_token", "duffel_", issued(r"duffel_ (?:test|live)_[A-Za-z0-9_=-]{43}"), ""),
    ("defined_networking_token", "dnkey-", issued(r"dnkey- [A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}"), ""),
    ("newrelic_key", "nrjs-|nrii-", issued(r"NRJS- [a-f0-9]{19}", r"NRII- [A-Za-z0-9_-]{32}"), ""),
    # Lob: live_ or test_, then 35 hex, or pub_ and 31 (lengths no hash has).
    ("lob_key", "live_|test_", issued(r"live_ (?:pub_[a-f0-9]{31}|[a-f0-9]{35})", r"test_ (?:pub_[a-f0-9]{31}|[a-f0-9]{35})"), ""),
    ("onepassword_secret_key", "a3-",
     issued(r"A3- [A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"), ""),
    # An Azure AD client secret: 3 characters, a digit, `Q~`, 31 to 34 more; found from `Q~`.
    ("azure_client_secret", "q~",
     r"Q~(?<=(?<![A-Za-z0-9_~.])[A-Za-z0-9_~.]{3}\dQ~)[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])", ""),
    ("authress_key", "acc_|acc-",
     r"\.acc(?<=[a-z0-9]\.acc)[_-][a-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,120}", ""),
    # A JWT's header is base64 JSON (`eyJ`); its payload need not be.
    ("jwt", r"eyj", _S + r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", ""),
    # Azure: a storage connection string's AccountKey, and a SAS URL's signature.
    ("azure_storage_key", "accountkey=", r"(?i)accountkey=([a-z0-9+/]{40,}={0,2})", ""),
    ("azure_sas_signature", r"sig=", r"[?&;]sig=([A-Za-z0-9%+/=]{30,})", ""),
    # A credential as a URL query parameter runs to the next `&`, `#` or space; its name says
    # what it is, so any value but a setting's words (`sort_key=created_at`) is one.
    ("url_parameter", "pass|pwd|secret|token|key|auth|sig",
     r"(?i)[?&](?:[a-z0-9_]*_)?(?:password|passwd|pwd|secret|token|key|apikey|auth|signature|sig)"
     r"=([^\s&#\"'<>`]{6,})",
     "query"),
    # A link's password, in quotes too (`ftp://user:"pw"@host`, as a shell is given it).
    ("url_password", r"://",
     r"(?<![A-Za-z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@'\"<>]*:"
     r"[\"']?([^\s/@'\"<>]+)[\"']?@[^\s/]+", ""),
    # A webhook's URL is its credential (hook_secret): a generated piece after the hook's name
    # (`hooks.zapier.com/hooks/catch/338/64htzp3/`; not `/webhooks/github`, `pre-commit-hooks`).
    ("webhook_url", "hook", r"(?i)https?://[^\s\"'`<>)\],/]*"
     r"((?:[^\s\"'`<>)\],h]|h(?!ttps?://))+)", "hook"),  # its path, to the next URL
    # Passwords by position (_PW): an option named for one in any case (`--new-password`,
    # `-newPassword`, `--db_password`, `--dbpassword`, Windows' `/password:`; `pass` on its own,
    # not `--bypass`), not an expression (`(Read-Host ...)`) nor another option; then a tool's
    # option (PASSWORD_FLAGS: mysql's glued `-p`, not `ssh -p 2222`; a login's `-p`).
    ("password_option", "pass|secret|token|key",
     r"(?<![A-Za-z0-9-])(?:--?" + _NAME_PIECES
     + r"(?i:[a-z]*(?:password|passwd|passphrase|passcode)|pass"
     r"|(?<=pass)phrase"
     r"|secret|[a-z]*storepass|keypass|token|(?:api|access|secret|auth)-?key)\d?(?:=|[ \t]+)"
     r"|/(?:(?i:[a-z]*(?:password|passwd|passphrase|passcode|pwd))|[A-Za-z]*Pass|pass):)"
     r"(?![-(])" + _PW,
     "position"),
    # A PIN or an access code (_PIN_NAME): four to twelve digits after "PIN" in capitals (a key, a
    # variable, a modem's command, prose: `ADMIN_PIN=905127`, `AT+CPIN="6194"`, "the PIN is
    # 4821"), a camel hump (`adminPin`), a pin option or key, or an access code (a door's, a
    # safe's); not "pin" in small letters otherwise, a verb as often.
    ("pin", "pin|puk|暗証番号|핀번호", _PIN_NAME + _PIN_JOIN + _PIN_VALUE + _DIGITS_END, "position"),
    ("password_option", "|".join(tools.lower() for tools, _ in PASSWORD_FLAGS),
     r"(?:(?<![A-Za-z0-9_.-])|(?<=^[-+])|(?<=\n[-+]))(?:" + _TOOL_FLAG + ")(?!-)" + _PW,
     "position"),
    # ... and a `-p` or `-P`, spaced or glued (`isql -Usa -P...`), in a login's command line, one
    # that names a user (`-u`, `--user`), before a value made as passwords are (both cases and a
    # digit): not a port, path, profile or package (`mvn -P Release2` names no user), nor
    # mysql's (it prompts).
    ("password_option", "-p",
     _LOGIN_LINE + r"[^\n]*?(?<![\w./-])-[pP][ \t]*" + _MADE_VALUE, "position"),
    # An element named for a password, its namespace's and its name's prefix too (`<wsse:Password
    # Type="...">`, `<db_password>`).
    ("password_option", "<pass|<secret|password>|passwd>|pass>|secret>",
     r"(?i)<(?:[a-z][\w.-]*:)?(?:[\w.-]*[_.-])?(?:password|passwd|pass|secret)(?:\s[^>\n]*)?>"
     r"([^<\s]{3,})</", "position"),
    # Dovecot's `{PLAIN}pw` and a space-separated config line (`remote_password pw`, mosquitto).
    ("password_option", "{plain}|{cleartext}", r"(?i)\{(?:plain|cleartext)\}([^:\s]+)", "position"),
    ("password_option", "pass",
     r"(?im)^[-+]?[ \t]*[a-z_]*(?:password|passwd)[ \t]+([!-9;<>-~][!-~]*)[ \t]*$", "position"),
    # A password piped to a command that reads it (`echo pw | docker login --password-stdin`) or
    # written to a file named for one (`> ~/.vault_pass.txt`); in code, a login call's or auth
    # pair's second string (`auth=("me", "pw")`), or the one after a password's name.
    ("password_stdin", "stdin|sudo|pass|secret|token|cred|kinit|cryptsetup",
     r"(?:echo|printf)\s+(?:-n\s+)?" + _PW + r"[\"']?\s*(?:\|[^|\n]*?"
     r"(?:--[\w-]*(?:pass|secret|token)[\w-]*-(?:on-)?(?:stdin|fd)\b|"  # --passphrase-fd
     r"--[\w-]*(?:password|passphrase|passwd)(?![\w=-]|[ \t]+[^\s<>|;&)#`'\"-])|"  # no value given
     r"sudo\s+-S|chpasswd|passwd\s+--stdin"
     r"|(?<=\|)\s*(?:sudo\s+)?(?:kinit|cryptsetup\s+(?:luksOpen|open))\b)"
     r"|>>?\s*\S*(?i:pass|secret|token|cred))", "position"),
    ("password_argument", "auth|login|logon|password|credential|connect|pdo|smtp|user|pw_set",
     r"(?i)(?:(?:auth|log_?in|logon|credential|connect|pdo|smtp|create_?user|add_?user|pw_set)"
     r"[\w.]*\s*"
     r"(?:=\s*)?\((?:[^()\n\"']|\"[^\"\n]*\"|'[^'\n]*')*?[\"'][^\"'\n]*"
     r"|[\"'][^\"'\n]*password[^\"'\n]*)[\"']\s*,\s*[\"']([^\"'\s]+)[\"'](?!\s*,\s*[\"']|\s*:)"
     r"|(?:[.:](?:password|auth)|(?:[.:]|(?<![\w.]))set_?(?:password|passphrase))\("
     r"\s*[\"']([^\"'\n]+)[\"']\s*\)", "position"),
    # A JSON Web Token's signing key, the string a sign or verify call is given after the payload.
    ("generic_secret", "jwt.",
     r"(?i)\bjwt\.(?:sign|encode|verify|decode)\(\s*[^,()\n]+,\s*[bru]?[\"']([^\"'\n]{6,})[\"']",
     "position"),
    # A login's user and password as a pair in prose ("creds for the VM: ubuntu / Vm-Pass-8",
    # "entra con root / X"), or with a Chinese, Japanese or Korean login's verb after it ("用
    # admin / X 登录"), or an administrator's account given so ("the router is admin / X").
    *[("login_pair", hints, r"(?i)" + before
       + r"(?<![^\s:(\"'`])[\w.@+-]{2,40}(?: ?/ ?|:(?!\d+\b))(?=[^\s/]*[\d!#$%&*+=?@^~])" + signed
       + r"(?=[^\s/\"'`]*[^\d\s.:,/\"'`-]|\d{8})([^\s/\"'`]{4,})(?=[\s,;)\"'`]|[.!?]?$)" + after,
       check)
      for hints, before, signed, after, check in (
          (_LOGIN_HINTS, r"(?<![a-z])(?:" + _LOGIN + r")(?![a-z])[^\n.;!?]{0,40}?", "", "",
           "prose"),
          (_LOGIN_HINTS, r"(?<![a-z])(?:" + _LOGIN_MORE + r")(?![a-z])[^\n.;!?]{0,40}?",
           _SIGNED_VALUE, "", "prose"),
          (_LOGIN_HINTS, "", _SIGNED_VALUE, r"(?=[^\n.;!?。]{0,12}?(?:" + _LOGIN_CJK + "))",
           "prose"),
          # ... or an administrator's account given as the pair ("the router is admin / X"), the
          # password made as passwords are (not a menu's `Admin / Users2`)
          ("admin|root", r"(?<![a-z])(?:is|was|use|as|with) +(?=(?:admin|root|administrator) / )",
           "", "", "made"))],
    # ... or the pair quoted, each in its code span or quotes ("Grafana login: `admin` / `X`"),
    # the password made as passwords are (code's pairs are names, numbers, snake case: `user_1` /
    # `user_2`, `8080` / `8443`), no thing's name (`LoginForm` / `LoginView2`), package's spec
    # (`react-router@7`), file (`Login2.tsx`) nor dotted path (`auth.login.fail2`); a host's dots
    # may stand between.
    ("login_pair", _LOGIN_HINTS,
     r"(?<![A-Za-z])(?i:" + _LOGIN + "|" + _LOGIN_MORE + r")(?![A-Za-z])"
     r"(?:[^\n.;!?]|\.(?=\w)){0,40}?[\"'`“‘][\w.@+-]{2,40}[\"'`”’] ?/ ?[\"'`“‘]"
     r"(?!(?:" + NAMED_THING.pattern + r"|[a-z][\w.-]*@\d[\w.]*|[\w.-]*\.[a-z]{1,5}"
     r"|[a-z_]\w*(?:\.[a-z_]\w*)+)[\"'`”’])([^\s/\"'`”’]{4,})[\"'`”’]", "made"),
    # ... or a user named and then "pass", a password's short name there ("user `editor`, pass X").
    ("login_pair", "pass",
     r"(?i)(?<![\w-])(?:user(?:name)?|login)[ \t]*[:=]?[ \t]*[\"'`]?[\w.@+-]{2,40}[\"'`]?"
     r"[ \t]*[,/;|]?"
     r"[ \t]+pass(?![a-z])[ \t]*[:=]?[ \t]*`?" + _PW, "made"),
    # ... or what a login or a lock is given "with": "connects as report_ro with X", "signs in
    # with X", "the safe unlocks with 58213907."; not a year, a count ("with 2500 users", any
    # number before a word: `0640 permissions`, `1048576 rows`) or a setting, nor a thing's name
    # (`LUKS2`, `Node20`: the "given" check).
    ("login_pair", _LOGIN_WITH_HINTS, r"(?i)(?:" + _LOGIN_WITH + r") +(?:[\"'`]?"
     r"(?=[^\s/\"'`]*[\d!#$%&*+=?@^~])(?![-$<{(%@?#])"
     r"(?!(?:19[5-9]\d|20[0-4]\d)\b|\d{1,3}(?=[\s,.;:)]|$)|\d+%|\d+\s+\w)"  # no year, count, share
     r"(?![^\s=]*=)([^\s/\"'`()]{4,})(?<![*_])(?=[\s,;)\"'`]|$))", "given"),
    # A `.pgpass` line `host:port:db:user:password` (a port or `*`), not hex groups (a MAC, IPv6).
    ("connection_password", ":", r":(?<=[\w*]:)(?<![:/]\d:)(?!(?:[0-9A-Fa-f]{1,4}(?::|\b)){4})"
     r"(?:[1-9]\d{0,4}|\*):[\w.*-]+:[\w.*-]+:"
     r"[\"']?([^\s:\"'`]+)(?![^\s\"'`])", "position"),
    # A connection string with no scheme, as Go's MySQL driver takes it (`"root:pw@tcp(db)/app"`);
    # not an image pinned to its digest (`python:3.12@sha256:...`).
    ("connection_password", "@",
     r"(?<=[\"'`])(?!(?:mailto|sips?|xmpp|tel):)[A-Za-z_][\w.-]*:([^\s:/@\"'`<>]+)"
     r"@(?!sha\d+:)[\w(\[.-]",
     "position"),
    # Postfix's `sasl_passwd` line: a relay in brackets, then `user:pw`.
    ("connection_password", "]:",
     r"(?m)(?:^|(?<=`))[ \t]*\[[\w-]+(?:\.[\w-]+)+\]:\d+[ \t]+[^\s:\[\]]+:([^\s`]{3,})"
     r"[ \t]*(?=$|`)",
     "prose"),
    ("connection_password", "jdbc:oracle:|sqlplus",
     r"(?i)(?:jdbc:oracle:[a-z]+:@?|sqlplus\s+(?:-[a-z]+\s+)*)[a-z0-9_$#.]+/([^\s/@\"'`]+)@", "position"),
    # After `Bearer`, in an Authorization, key or token header, in a cookie (quoted too): any value.
    ("bearer_token", "bearer", r"(?i)(?<![a-z0-9])bearer\s+[\"']?([^\s\"'`]{8,})", "position"),
    ("http_credential", "authorization:|key:|token:|secret:|auth:|cookie:",
     r"(?i)(?<![a-z0-9-])(?<!//)(?:authorization:\s*[\"']?(?:[a-z-]+\s+)?+[\"']?"
     r"|x-[a-z-]*(?:key|token|secret"
     r"|auth):\s*[\"']?|(?:set-)?cookie:\s*[a-z0-9_.-]+=[\"']?)([^\s;\"'`]{6,})", "position"),
    # HTTP Basic credentials: base64 `user:password` after `Basic`, curl's `-u u:p`, and a
    # proxy's list of users (Traefik's `basicauth.users=u:p`).
    ("basic_auth", "basic", r"(?i)basic(?<![a-z0-9]basic)\s+([a-z0-9+/]{12,}={0,2})(?![a-z0-9+/=])", "basic"),
    ("basic_auth", "curl",
     r"(?:(?<![\w-])-[A-Za-z]*u|--user(?<![A-Za-z0-9-]--user))(?:\s+|=)[\"']?"
     r"([^\s\"':@]*:[\"']?(?!\$)[^\s\"']{6,})", "password"),  # not `$USER:$PASS`
    # ... a `user:pw` after an option or key named for auth or a user (`-auth me:pw`,
    # `credentials=me:pw`, `--user me:pw`), with a sign or capitals and digits: not a scheme's
    # pair (`--auth sigv4:us-east-1`, `hmac:sha256`), nor a user and group (`--user 1000:1000`).
    ("basic_auth", "auth|credential|--user",
     r"(?:(?<![A-Za-z0-9_-])--?(?i:(?:[a-z]+-)*+auth)(?:=|[ \t]+)"
     r"|(?<![\w-])--user(?:=|[ \t]+)"
     r"|(?<![A-Za-z0-9])(?i:credentials?)[ \t]*[=:]"
     r"[ \t]*)[\"']?[^\s:\"'@/]+:(?=" + _SIGNED_PAIR + r")([^\s\"'@]{3,})", "prose"),
    ("basic_auth", "basicauth|basic_auth|basic-auth",
     r"(?i)basic[_-]?auth[\w.-]*users\s*[=:]\s*[\"']?([^\s\"':@,]+:[^\s\"',]{6,})", "password"),
    # Generic rules: a secret's name assigned a value (`DB_PASS=...`, `"password": "a,b;c"`).
    ("generic_secret", "pass|pwd|secret|token|key|credential|auth|" + _NAMES_ONE_WORD,
     r"(?i)(?<![a-z0-9{])(?<!public[ _-])(?<!publishable[ _-])(?:[a-z]+(?:password|passwd)|"
     + literal_trie(w for w in SECRET_WORDS + tuple(_NAMES_ONE_WORD.split("|")) if " " not in w)
     + "|(?:" + literal_trie(w.replace(" ", "_") for w in PASSWORD_NAMES.split("|")) + ")"
     + _OF_THING
     + ")" + _NOT_ID_KEY + assigned(), "password"),
    # The same in camelCase (`clientSecret := "..."`), in the original case, each word found first
    # (see issued); a reference's name (`existingSecret`, `adminPasswordKey`) holds no value.
    ("generic_secret", "pass|pwd|secret|token|key|credential|auth",
     "(?:" + "|".join(f"{word}(?<=[a-z0-9]{word})(?<!Public{word})(?<!Publishable{word})"
                      f"(?<!existing{word})(?<!PasswordKey)(?<!SecretKey)"
                      + (_NOT_ID_CAMEL_KEY if word == "Key" else "") for word in (
         "Password", "Passwd", "Passphrase", "PassPhrase", "PassWord", "Passcode", "PassCode",
         "Pwd", "Pass", "Secret", "Token", "Credential", "Auth", "Key"))
     + ")" + assigned(_OPERATORS + r"|(?<=\s)(?=[\"'])"), "password"),
    # A key and a value as attributes (.NET, NuGet): `<add key="Password" value="..." />`.
    ("generic_secret", "key=|name=",
     r"(?i)(?:key|name)=[\"'][^\"'\n]*(?:password|passwd|pwd|secret|token|api_?key|credential)"
     r"[^\"'\n]*[\"']\s+value=[\"']([^\"'\n]{6,200})[\"']", "password"),
    # ... or as YAML lines, as a Kubernetes container's env lists them (`- name: DB_PASSWORD`, then
    # `value: "..."`).
    ("generic_secret", "name:",
     r"(?i)name:[ \t]*[\"']?[\w.-]*(?:password|passwd|pwd|token|api_?key|access_?key)"
     r"[\"']?[ \t]*\n[ \t]*value:[ \t]*(?![\"']?\d+[\"']?(?:\s|$))"  # a number: a setting's
     r"(?:\"([^\"\n]+)\"|'([^'\n]+)'|([^\s\"'#]+))", "given"),
    # SQL's password clause of a user or a role (`ALTER ROLE app WITH LOGIN PASSWORD '...'`).
    ("generic_secret", "password",
     r"(?i)\b(?:create|alter)\s+(?:user|role|login)\s[^;\n]*?\bpassword\s*=?\s*'([^'\n]+)'",
     "position"),
    # ... or as options: `reg add ... /v DefaultPassword /d ...`, `-Name ... -Value ...`; a name
    # that ends in the word (`MaximumPasswordAge` is a policy).
    ("generic_secret", "/v |-name ",
     r"(?i)(?:/v|-name)\s+[\"']?\w*(?:password|passwd|pwd|secret|token|api_?key|credential)"
     r"[\"']?\s+(?:/t\s+\S+\s+)?(?:/d|-value)\s+" + _PW, "password"),
    # A value at most 32 characters after a credential word in its clause (further, another's).
    ("generic_secret", "pass|pwd|secret|token|key|credential|auth|bearer",
     r"(?i)(?<![a-z0-9])(?<!public[ _-])(?<!publishable[ _-])(?:" + literal_trie(SECRET_WORDS)
     + r")s?(?![a-z0-9])[^\n.,;!?。，；！？]{0,32}?"
     r"(?<![A-Za-z0-9+/=_-])([A-Za-z0-9+/=_-]{16,})", "random"),
    # A passphrase unquoted after its name or a password's and a colon or a copula in its clause
    # ("is", "to", "ist", _IS): four to ten words in small letters (accented too), a number after
    # them or none, to the clause's end, a dash, a bracket or a conjunction, as diceware and
    # people make them (the "diceware" check).
    ("generic_secret", PASSWORD_NAMES + "|pass phrase|frase|wachtzin|fraza|фраза",
     r"(?i)(?<![a-z0-9])(?:" + PASSPHRASE_NAMES + "|" + PASSWORD_NAMES + r")(?![a-z0-9])"
     r"[^\n:：.;!?]{0,60}?"
     r"(?:[:：]|\s(?:" + _IS + r"|to)(?!\S))\s*"
     r"(" + _PHRASE_WORD + r"(?: " + _PHRASE_WORD + r"){3,9}(?: \d{1,4})?)"
     r"(?=\s*(?:[.,;!—–()]|$)| +" + PHRASE_STOPS + ")", "diceware"),
    # ... or any three to ten words right after "passphrase is" or "passphrase:" ("the SSH key
    # passphrase is kettle on the windowsill at dawn"), to the clause's end or a conjunction, the
    # first none that describes one (PHRASE_OPENS, DESCRIBING_END: "is stored in the vault").
    ("generic_secret", "passphrase|pass phrase",
     r"(?i)(?<![a-z0-9_])pass ?phrases?(?:[ \t]*[:：][ \t]*|[ \t]+(?:is|was)[ \t]+)"
     r"(?!(?:" + PHRASE_OPENS + r")(?![\w'’]))"
     r"([^\W_][\w'’-]*(?: (?!" + PHRASE_STOPS + r")[\w'’-]+){2,9}?)"
     r"(?=\s*(?:[.,;!?)]|$)| +" + PHRASE_STOPS + ")",
     "words"),
    # A password quoted within 40 characters after its word ("the password for staging is"),
    # not the quote that closes a string naming it (`env("DB_PASSWORD", default="")`) nor an
    # apostrophe in a word ("la passphrase dell'export"); guillemets may hold spaces.
    ("generic_secret", PASSWORD_HINTS,
     r"(?i)(?<![a-z0-9])(?:" + PASSWORD_NAMES + r"|secret)s?(?![a-z0-9])"
     r"(?:[ \t]*[:：][ \t]*|(?:[^\n\"'“”„«=(\[.,;:!?]|(?<=\w)'(?=\w)|\.(?=[\w/])){1,40}?"
     r"(?:" + _COPULA_COLON + r")?)"
     r"(?:\"(?!\s)([^\"\n]{6,100}?)[\"”]|[“„](?!\s)([^“”\"\n]{6,100}?)[”“\"]"
     r"|(?<!\w)'(?!\s)([^'\n]{6,100}?)'|« ?(?!\s)([^»\n]{6,100}?) ?»)", "phrase"),
    # ... or a code span right after the word, its copula or a colon ("the passphrase `...`").
    ("generic_secret", PASSWORD_HINTS,
     r"(?i)(?<![a-z0-9])(?:" + PASSWORD_NAMES + r")s?(?![a-z0-9])(?: +(?:" + _COPULAS + r"))?"
     r"[ \t]*[:：]?[ \t]*`(?!\s)([^`\n]{6,100})`", "prose"),
    # Four to twelve digits as a password's, as a PIN's ("the Wi-Fi password is 9770", "a senha
    # do cartão é 9770"), not a port (`localhost:5432`, a host's).
    ("generic_secret", PASSWORD_HINTS,
     r"(?i)" + _PASSWORD_WORD + _DIGITS_JOIN + _PIN_VALUE + _DIGITS_END, "position"),
    # A password word and its value in prose ("das Passwort ist ..."); failing that, a bare word,
    # a colon (the value on the next line), a change's verb and "to"; or a word of its clause shaped
    # as a chosen password, not a user at a host nor escapes ("the password you pasted, castl3#0").
    *[("generic_secret", PASSWORD_HINTS, r"(?i)" + join + _PROSE_VALUE, "prose")
      for join in (
        _PASSWORD_WORD + _PASSWORD_JOIN,
        r"(?<![0-9_$])(?:(?<![a-z])|(?![a-z]))(?:" + PASSWORD_NAMES + r")s?" + _SUFFIX + r"[ \t]+",
        _PASSWORD_WORD + _WORDS_ON + r" *[:：][ \t]*(?:\n[ \t]*(?=[^\s:]+(?:\n|$)))?",
        _CHANGE_VERB + r"(?![a-z])[^\n.!?]{0,40}?" + _PASSWORD_WORD + _WORDS_ON
        + " +" + _CHANGE_TO + " +",
        _PASSWORD_WORD + r"(?:" + _CLAUSE_ON + r",? +|[^\x00-\x7f\n。！？]{1,40}?[「『“]?|[「『“])"
        + _CHOSEN + _NO_VALUE_AFTER)],
    # A Chinese password set off by a space after 密码是, holding Han, a digit and a sign ("密码是
    # 春风2024@杭州"), not a rule about one ("密码规则为至少8位且含A-Z").
    ("generic_secret", "密码|密碼|口令",
     r"(?:密码|密碼|口令)(?:是|为|為|：|:)[ \t]+"
     r"(?=[^\s，。！？；、,;]*[\u3400-\u9fff])(?=[^\s，。！？；、,;]*\d)"
     r"(?=[^\s，。！？；、,;]*[!#$%&*@^~])([^\s，。！？；、,;]{6,40})", "position"),
    # ... and before its word ("Summer!24 for the dev passwords", "nimm Fussball07 als Passwort",
    # "把 xiaoming0815 设成了密码").
    # A long word in small letters only "as the password" ending its phrase (not "as the password
    # manager": a thing's name).
    *[("generic_secret", PASSWORD_HINTS, r"(?i)(?<![^\s(\"'`“「])" + shape
       + _NO_VALUE_AFTER + _VALUE_BEFORE + r"(?=[\"'`”」)]?(?:" + join + ")" + _PASSWORD_WORD
       + r"(?![a-z])" + after + ")", "prose")
      for shape, join, after in ((_CHOSEN, _FEW_WORDS + r"| *[^\x00-\x7f\s,，;；。、]{0,8}?", ""),
                                 (_WORD_NUMBER, _LINKED, ""),
                                 (r"(?=[a-z]{9})", r" +as +(?:the +|a +)?(?:\w+ +)?",
                                  _PHRASE_ENDS))],
    # After the generic rules (they name the kind first): a variable holding a password's word as
    # any piece of its name (`PASS_SMTP`, `MOT_DE_PASSE_ADMIN`), no piece after it an attribute
    # (_KEY_REST); `pw` only last (`PW_*` are Playwright's settings); spaces may stand around `=`
    # (`ldap_default_authtok = pw`); words to a closing quote are one value
    # (`Environment="PASSPHRASE=four words of it"`).
    ("password_variable", "pass|secret|authtok|contrasena|mot_de_passe|" + PASSWORD_HINTS,
     r"(?i)(?<![a-z0-9_])(?:pgpassword|(?:[a-z0-9_]*_)?(?:password|passwd|passphrase|pwd|"
     r"(?<=_)pw(?=[ \t]*=[ \t]*(?!\d+(?![^\s\"'`,;&])))"  # not a pulse width (`SERVO_PW=1500`)
     r"|pass|secret|authtok|mot_de_passe|contrasena|"
     + _VARIABLE_NAMES + r"))" + _KEY_REST
     + r"[ \t]*=[ \t]*"
     r"[\"']?((?<=[=\"'])(?![^\"'\n]*[%{])[^\s\"'`,;&]+(?: [^\s\"'`,;&]+)+(?=[\"'])|[^\s\"'`,;&]+)",
     "position"),
    # An account's one-time recovery, backup or access code ("use recovery code WLWH-TSO4-...",
    # `RECOVERY_CODE=...`):
    # eight characters or more, a digit in it; a group in small letters holds one (not "path").
    ("recovery_code", "recovery |recovery-code|recovery_|backup |backup-code|backup_|backupcode|"
                      "access code|accesscode|access_code|erişim kodu|yedek kod|zugangscode|"
                      "wiederherstellungscode|recuperaci|recuper|récupération|secours|respaldo|"
                      "codice di backup|codici di backup|herstelcode|zapasow|odzyskiwania|резервн|"
                      "восстановления|恢复码|备用码|备用验证码|恢复代码|备份码|バックアップコード|"
                      "リカバリーコード|復旧コード|백업 코드|복구 코드|scratch|emergency|notfall|"
                      "urgence|emergencia|mã dự phòng|mã khôi phục|الاسترداد|復原碼|恢復碼|備用碼",
     # ... a word may stand inside the name ("backup login code"); what it is "for" is no value
     # (`recovery key for LAPTOP-7QK2M: <key>`).
     r"(?i:(?:recovery|backup|wiederherstellungs)(?: [a-z]+)?[ _-]?(?:codes?|keys?)"
     r"|(?:access|zugangs)[ _]?codes?"
     r"|erişim kodu|yedek kod(?:u|lar)?|c[oó]digos? de (?:recupera\w+|respaldo|backup)"
     r"|codes? de (?:r[ée]cup[ée]ration|secours)|codic[ei] di (?:backup|recupero)|herstelcodes?"
     r"|kody? (?:zapasow\w*|odzyskiwania)|резервн\w* код\w*|код\w* восстановления"
     r"|(?:scratch|emergency|notfall)[ -]?codes?|codes? d'urgence|c[oó]digos? de emergencia"
     r"|mã (?:dự phòng|khôi phục)|رموز? الاسترداد|復原碼|恢復碼|備用碼"
     r"|恢复码|备用码|备用验证码|恢复代码|备份码|バックアップコード|リカバリーコード|復旧コード"
     r"|백업 코드|복구 코드)(?![A-Za-z0-9_-])"  # the name ends (not `ACCESS_CODE_TTL`)
     r"[^\n.!?]{0,60}?(?:[:：—–=] *| +(?<! for )(?<! of )|(?<=[是は는은])|(?=[\"'`「«]))[\"'`「«]?"
     r"(?=(?:[A-Z]+[ -])*[A-Za-z]*\d)(?=[A-Za-z0-9]{8}|[A-Za-z0-9]{4,}[ -]" + _CODE_GROUP + ")"
     r"(" + _CODE_GROUPS + r"(?:(?:[,、] *| +(?:and|or|y|o|und|oder|et|ou|e|i|a|en|of|ve|и|или|lub)"
     r" +|[和及或])" + _CODE_GROUPS + r")*)(?![\w-])", "position"),
    # An app password as Google prints it, four groups of four letters, after a password word
    # (an option's too: `-smtp-password`) or in postfix's `sasl_passwd` (`[host]:587 user:pass
    # word`): letters that are no words.
    ("app_password", PASSWORD_NAMES + "|]:",
     r"(?i)(?:(?<![a-z])(?:" + PASSWORD_NAMES + ")s?(?:" + _PASSWORD_JOIN + r"|[ \t]+)\\?[\"'`]?"
     r"|\]:\d+\s+\S+?:)((?-i:[a-z]{4}([ -])[a-z]{4}(?:\2[a-z]{4}){2}))(?![a-z])", "letters"),
    # A Wi-Fi network's key: "key" is its password's name where the clause names the network (a
    # value made as passwords are, not a security mode: `WPA2-Personal`, `802.1X`).
    ("generic_secret", "wifi|wi-fi|wlan|ssid|wpa",
     r"(?i)(?<![a-z])(?:wi-?fi|wlan|ssid|wpa2?)(?![a-z])[^\n.;!?]{0,60}?(?<![a-z])key"
     r"(?:[ \t]*[:=][ \t]*|[ \t]+(?:is[ \t]+)?)(?![\"'`]?(?:wpa|wep|802\.))" + _PW, "made"),
    # A Terraform variable whose name ends in a secret's word, its default the value.
    ("generic_secret", "variable",
     r"(?i)variable\s+\"[^\"\n]*(?:password|passwd|secret|token|api_?key)\"\s*\{[^}]*?"
     r"\bdefault\s*=\s*\"([^\"\n]+)\"", "made"),
    # A C macro (`#define WIFI_PASS "..."`), as Arduino sketches hold their Wi-Fi password.
    ("generic_secret", "#define",
     r"#define\s+\w*(?:PASS|PWD|SECRET|TOKEN|KEY)\w*\s+\"([^\"\n]{4,})\"", "password"),
    ("generic_secret", SECRET_WORDS_ZH,
     r"(?<![<‹〈《])(?:" + SECRET_WORDS_ZH + r")"
     r"(?:[^\n。！？；]{0,12}?(?:是|为|為|：|:|=|就是|设为|设置为|改为|改成|换成|設為|改為)+了?)?"
     r"\s*[`\"'「“]?"
     r"([^\s`\"'」”，。；,;\u3000-\u9fff\uff00-\uffef]{6,})", "password"),
)
# Letters re.IGNORECASE matches to ASCII ones (`ſecret=`), folded so the pre-filters admit them.
FOLD_LIKE_IGNORECASE = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
LIKE_IGNORECASE = Lazy("[" + "".join(map(chr, FOLD_LIKE_IGNORECASE)) + "]")
# looks_random (generated, not a name): 16 characters or more, 3 bits of entropy a character, a
# letter and a digit, the kind of character changing every RANDOM_MIX (hex every 2nd, names 5th).
RANDOM_MIN = 16
MIN_ENTROPY = 3.0
RANDOM_MIX = 3.5
HEX = Lazy(r"[0-9a-f]+|[0-9A-F]+")
DIGEST_HEX = {"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128}  # a digest's hex, by its prefix
ALGORITHM_NAMED = Lazy(r"(?i)\b(md5|sha1|sha256|sha512)[:=]\Z")
SID = Lazy(r"[A-Z]{2}[0-9a-f]{32}")  # a typed SID (Twilio's `AC<hex>`), an account's id
# An id's hex, after its type's capitals (`AC<hex>`), or written in a to p (a browser extension's).
HEX_ID = Lazy(r"[A-Z]{0,3}[0-9a-f]+|[0-9A-F]+|[a-p]{32}")
# Digits between letters (`k8s`, `v2beta1`): a name has a run or two, a random token more.
INNER_DIGITS = Lazy(r"(?<=[A-Za-z])[0-9]+(?=[A-Za-z])")
INNER_DIGIT_RUNS = 3  # ... or one fewer in a token holding a CONSONANT_RUN (`dwkblbas205irhk77...`)
# Letters no word strings together: five consonants in a row (`y` a vowel: `rhythm`, `nightly`).
CONSONANT_RUN = Lazy(r"[^\W\d_AEIOUYaeiouy]{5}")
# ... or three (`y` not a vowel): once in a group (ODD_GROUP), twice in a run (`qtvdmwpk`).
CONSONANT_TRIPLE = Lazy(r"[^\W\d_AEIOUaeiou]{3}")
# A camelCase word: a capital, three lower-case letters, a vowel among them (not `Bhdd`); or `V2`.
CAPITAL_WORD = Lazy(r"(?=[A-Z][a-z]{3})(?=.{0,3}[AEIOUYaeiouy])|[A-Z](?=[0-9])")
# A mixed-case token with no keyword, split where a name's words meet (`get|User|By|Id|V2|Async`),
# is random when ODD_PIECES parts are no word (a name has one or two): one or two letters,
# capitals, no vowel but y, five consonants in a row; or a rare letter (j, z, q not in `qu`). A
# piece written whole with a digit, up to ODD_SHORT characters, needs one fewer, a capital and a
# vowel (`By`) then counting as a word (`HPuuWnlpukfIkbdCP3Yf`; not a run joined from pieces,
# `fastmldnn_iq-ap-deepsig201610A`). A letter before its number is a word's (`S3`, `V2`), and so
# is a version's V after a number (`ClientV1V2V3`).
NAME_PIECE = Lazy(r"((?<![0-9])[A-Za-z](?=[0-9])|(?<=[0-9])V(?=[0-9]))|[A-Z]+(?![a-z])"
                  r"|[A-Z]?[a-z]+")
ODD_PIECE = Lazy(r"..?|[A-Z]+|[^AEIOUaeiou]+|.*" + CONSONANT_RUN.pattern + ".*")
RARE_LETTER = Lazy(r"[jzJZ]|[qQ](?![uU])")
# A token in one case (`a-z0-9`, base32) is random with under VOWEL_SHARE of its letters vowels.
VOWEL_SHARE = 0.25
ALPHABET = "abcdefghijklmnopqrstuvwxyz"
KEYBOARD = "qwertyuiopasdfghjklzxcvbnm"  # the rows of letters, left to right, top to bottom
LETTER_RUNS = (ALPHABET, ALPHABET[::-1], KEYBOARD, KEYBOARD[::-1])  # what a stand-in types
ODD_GROUP = Lazy(r"^[^aeiouyAEIOUY]+$|" + CONSONANT_TRIPLE.pattern)  # a group no word has
ODD_PIECES = 4
ODD_SHORT = 30
# Letter pairs words are made of: the 250 commonest inside the words of CPython 3.11's `Lib/`,
# its tests left out (bench/letter_pairs.py prints them); 96% of that source's pairs, 37% of
# random letters'. A token in one case with a digit, or of letters alone, is random where
# RARE_SHARE of its pairs, RARE_LEAST or more, are none of these (rare_pairs:
# `56xevqmgdwrtg7irpnd1`; not `aarch64unknownlinux`). Letters alone, with no digit to mark them
# made, also need two CONSONANT_TRIPLEs (`kwtzbxqvmhdrlpfj`; not `frontendbuildcache`, a word of
# Dutch or Czech as a rule), in mixed case ODD_PIECES - 1 pieces no word is besides (not
# `KraftfahrzeugHaftpflicht`); not a run joined from pieces, whose short names glue into rare
# pairs, nor a stand-in typed along LETTER_RUNS.
COMMON_PAIRS = frozenset("""
ab ac ad ag ai ak al am an ap ar as at au av aw ay ba be bi bj bl bo br bu by ca cc ce ch ci ck
cl co cr cs ct cu da dd de di dl do dr ds du ea eb ec ed ee ef eg el em en ep eq er es et ev ew
ex ey fa fe ff fi fl fo fr ft fu ge gh gi gl gn gr gs gu ha he hi ho hr ht ia ib ic id ie if ig
il im in io ip ir is it iv ix iz je ke ki la ld le lf li ll lo ls lt lu ly ma mb me mi mm mo mp
ms mu na nc nd ne nf ng ni nk nl nn no ns nt nu nv oa ob oc od of og oi ok ol om on oo op or os
ot ou ov ow ox pa pe pi pl po pp pr pt pu py qu ra rc rd re rg ri rk rl rm rn ro rr rs rt ru ry
sa sc se sh si sl sm so sp ss st su sy ta tc td te th ti tl to tp tr ts tt tu ty ua ub uc ue uf
ui ul um un up ur us ut va ve vi wa we wh wi wn wo wr xc xe xp xt yp ys yt ze""".split())
RARE_SHARE = 0.3
RARE_LEAST = 3
RARE_PAIRS = 8  # pairs judged at least: fewer are a short name's (`debug.go#L185`)
RARE_VOWELS = 0.36  # words' and pinyin's letters are 40% vowels or more, random ones' 19%
DIGIT = Lazy(r"[0-9]")
NAME_REST = 12  # the shortest run of pieces joined that is judged (credential_shaped)
HEX_ENTROPY = 2.5  # a run of hex is judged random from this entropy a character
# A list of 32 bytes or more written as numbers (`[202, 51, ...]`) is key material where they
# look drawn: under 256, in no order, as many different as BYTES_DISTINCT of what drawn bytes of
# that count hold (16 drawn hold 15.5 different; a table repeats or rises, a format's magic too).
BYTE_LIST = Lazy(r"\[\s*(\d{1,3}(?:\s*,\s*\d{1,3}){31,})\s*,?\s*\]")
# ... or 14 bytes or more as a string literal's escapes that are no UTF-8 or Latin-1 text (Flask's
# `secret_key = b'\xfdq\xcd...'`). A byte: an escape (`\xfd`, `\n`, `\'`) or printable ASCII; a
# run ends at spaces but ones before more escapes, a word away at most, or before a short tail a
# quote closes (a space byte, as Python's repr writes it: `b'...\x8c R_'`).
_BYTE = r"\\x[0-9a-fA-F]{2}|\\.|[!-\[\]-~]"
_SPACE_AMONG_BYTES = r" +(?=(?:\S{1,8} +)?\S*\\x|\S{0,8}[\"'][`.,;:)\]}]*(?![!-~]))"
BYTE_ESCAPES = Lazy("(?:" + _BYTE + "|" + _SPACE_AMONG_BYTES + ")+")
# A literal's prefix and quotes, not its bytes.
LITERAL_EDGES = Lazy(r"\A`?[bB]?[\"']|[\"']`?[.,;:)\]}]*\Z")
OPENING_QUOTE = Lazy(r"(?<![A-Za-z0-9])[bB]?[\"']")  # not a word's (`don't`) nor a byte's (`v"`)
ESCAPED_BYTES = 14  # a 16-byte key's, less a space its run may lose at an edge
ESCAPED_DISTINCT = 0.5  # escapes say bytes already: only a padding's or a frame's repeats are none
BYTE_ESCAPE = Lazy(r"\\x([0-9a-fA-F]{2})|\\(.)|(.)")  # one byte of a BYTE_ESCAPES run
ESCAPED_CHARS = {"n": "\n", "r": "\r", "t": "\t", "0": "\0"}
BYTES_DISTINCT = 0.75
BYTES_KIND = "key_bytes"
NAMED_DIGITS = 20  # digits a credential's word names: a snowflake id has 19, a card's number 16
RANDOM_TOKEN = Lazy(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{16,}")
# A shorter one (alternating) is generated where letters, two or more of each case, and digits
# alternate: the kind of character changes at every other one or more often, in runs of at most
# SHORT_LETTERS letters and SHORT_DIGITS digits (`K7m4Q9z2`, `kFk-9vQ2xL7m`), in a link's query
# too. A name's words make longer runs (`V1beta1`); one case is as often a type's, a duration's or
# an interface's (`int8x16_t`, `1h23m45s`, `enp0s31f6`); a dot joins code (`cv2.CV_8UC3`).
SHORT_TOKEN = Lazy(r"(?<![\w./@+\\-])(?=[\w-]{0,24}?\d)(?=[\w-]{0,24}?[A-Za-z])"
                   r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+){0,3}(?![\w/@=+\\-]|\.\w)", re.A)
SHORT_MIN = 8  # fewer are a model's, a formula's or a size's (`RN50x4`, `Na2SO4`, `2x16GB`)
SHORT_LETTERS = 3
SHORT_DIGITS = 2
SHORT_ENTROPY = 2.5  # bits a character: not a repeat (`v2_v2_v2_v2`)
# From MID_MIN letters and digits written whole, a token is judged as a long one is, by its pieces
# (mid_generated): password generators default to 12 to 15 characters.
MID_MIN = 12
FILE_PATH = Lazy(r"(?:~|\.{1,2})?/[\w.-]+/")  # two folders deep: a file's place, not a password
SVG_PATH = Lazy(r"[MmLlHhVvCcSsQqTtAaZz0-9-]+")  # a drawing's commands and numbers (`0h24v24H0z`)
# random_token (credential_shaped): a generated-looking token is withheld whatever word precedes
# it, catching unlisted issuers; not a labelled digest, base64 text without `:`, a publishable key.
# The parts base64's `+` joins in a token (`sxeNVAh+yKTHPWRP58Wh`), judged whole.
BASE64_PLUS = Lazy(r"(?<![A-Za-z0-9])[A-Za-z0-9]+(?:\+[A-Za-z0-9]+)+")
TOKEN_PIECES = Lazy(r"[-_/+=]+")
# A value a dot joins (`jCEqxNQ.UBJ4iWb3`, a generated password's): judged by its pieces rejoined
# (dotted_random) where words and numbers are a third of it or less, else it is code, a host or a
# version (`np.float32`, `a1b2c3.cloudfront.net`, `v1.2.3-beta.4`).
DOTTED_TOKEN = Lazy(r"(?<![\w./@\\%-])[A-Za-z0-9][\w-]*(?:\.[\w-]+)+(?![\w/\\-]|\.\w|@\w)", re.A)
# ... not a selector by its tag (`div.BNeawe.s3v9rd`, scraped pages' classes) or mktemp's name.
DOTTED_NAMED = Lazy(r"(?:div|span|a|p|h[1-6]|li|ul|ol|button|input|img|section|article|nav|header"
                    r"|footer|main|table|tr|td|th|form|label|svg|i|b|em|strong|tmp)\.")
# ... or three words or more and a number a dot joins, as a password manager makes a memorable
# password (`Maple.harbor.Dune.4821`, memorable): a module's path holds no number, a host no
# capital's word; two words and a number are as often a model's name (`Dell.Latitude.7420`).
# A hyphen or an underscore joins them too, a digit or two glued to a word past the first
# (`Panorama-Clip-Slain7`): a model's version stands apart or on its first word (`Qwen2-Math-...`).
MEMORABLE_WORD = Lazy(r"[A-Za-z]{3,10}")
MEMORABLE_NUMBER = Lazy(r"(?!" + _YEAR + r"$)\d{3,4}")  # not a year (`Report.Final.2023`)
MEMORABLE_GLUED = Lazy(r"[A-Za-z]{3,10}\d{1,2}")
JOINED_TOKEN = Lazy(r"(?<![\w./@\\%-])[A-Za-z]{3,10}([-_])[A-Za-z]{3,10}\d{0,2}"
                    r"(?:\1[A-Za-z]{3,10}\d{0,2})+(?![\w/\\@-]|\.\w)")
OWN_WORDS = Lazy(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])")  # the words of a token's own text
# A URL path's collection before a record's id, not one whose ids are keys (`/hooks/`, `/tokens/`).
RECORD_PATH = Lazy(r"/(?!(?:web)?hooks/|tokens/|keys/|secrets/|credentials/|passwords/|triggers/"
                   r"|callbacks/|invites/|shares/|signatures/|services/)[a-z][a-z0-9_-]*s/\Z")
GLUED_BEFORE = Lazy(r"[A-Za-z0-9.]*[A-Za-z0-9]\.$")  # a dotted token's run before a finding
# A generated password with signs generators add (`Yaf*qw~8SfRLhhtg`, `k8#Xq)v2Lm;T9w>Rb`): judged
# by its letters and digits when no piece between signs has RANDOM_TOKEN's length (decoded if
# percent-escaped). Brackets and `;` join it too; a quote, a slash or a space end it. A sign, a
# join between letters that opens nothing (`kyPUCrZfoPiPE<2ZTdRCk`; `Color(0xFF92A3FD` is a call),
# or brackets and joins inside it twice (`11)3YA&CmBp`), not markup (MARKUP), makes it signed.
_SIGNED_JOINS = r"\w.+=@()<>;&\[\]{}|-"  # what joins its pieces besides the signs
_SIGNED_SIGNS = "!#$%*^~"  # what a generator adds and code rarely holds
_SIGNED_CHARS = _SIGNED_SIGNS + _SIGNED_JOINS
_BRACKETS = r"[<>;&()\[\]{}|]"
_ONE_JOIN = r"\w[<>;)\]}|]\w"  # one join: no opening bracket, no `&` (`R&D`)
_TWO_JOINS = r"\w" + _BRACKETS + r"+\w[\w.+=@-]*" + _BRACKETS + r"+\w"  # each between letters
_SIGNED_CHAR = r"[" + _SIGNED_CHARS + r"]"
BRACKET_RUN = Lazy(_BRACKETS + "+")
QUERY_KEY = Lazy(r"(?:^|&)[\w.-]+=")  # a query's name, before its value (signed runs)
_CLOSER = r"[.;)>\]}|]"  # what ends a statement or a group: no token ends in one
# A data centre's or region's suffix (Mailchimp's `-us21`) is judged apart from the value before it.
REGION_SUFFIX = Lazy(r"-(?:[a-z]{1,4}|[A-Z]{1,4})\d{0,3}\Z")  # one case: mixed ones are random
SIGNED_TOKEN = Lazy(r"(?<!" + _SIGNED_CHAR + r")"
                    r"(?=[" + _SIGNED_JOINS + r"]*(?:[" + _SIGNED_SIGNS + r"]|" + _ONE_JOIN + r"|"
                    + _TWO_JOINS + r"))"
                    + _SIGNED_CHAR + r"{12,128}(?<!" + _CLOSER + r")"
                    r"(?!" + _CLOSER + r"*[\w!#$%*^~+=@(<&\[{-])", re.A)
SIGNS = Lazy(r"[^A-Za-z0-9]+")
# A file's name (`clip.mp4`, `MICROS~1.XLS`), no password: any extension ends a dotted value; a
# signed one, only a common type's after `~` (a bundle's chunk, a package: `runtime~main.<hex>.js`),
# since a generated password may end in `.` and letters too.
FILE_END = Lazy(r"\w\.(?:[a-z]{1,7}|(?=[a-z0-9]{0,4}[a-z])[a-z0-9]{1,5}|[A-Z]{2,4})\Z")
TILDE_FILE = Lazy(r"\A[^!#%*^]*~[^!#%*^]*\.(?:[cm]?js|css|map|json|html?|deb|rpm|whl|t?gz|xz|zip"
                  r"|jar|woff2?|ttf|svg|png|jpe?g|gif|webp|ico|pdf|xlsx?|docx?|pptx?|csv|txt|log"
                  r"|tmp|bak|swp|ipynb|py|ts|tsx|jsx|so|dll|exe)\Z", re.I)
# Code and markup that brackets and joins make look signed: a call (`vld1q_f32(src)`), a tag, an
# entity, a query's next name, an address-of (`&hw_uart0_rx`), a place-holder's opening (a tag or
# a place-holder is named in words: `<td>`, `<worktreeHash`, and a generic type's `Vec2<TCtx`, one
# name before it; `<Zt7>` is a password's, as `K)JX;bFc4&hpe3<cpms` is), a hex literal between
# joins (`(reg&0xFF00)>>8`), a pattern's class of ranges in one kind and its count
# (`ghp_[A-Za-z0-9]{36}`; `[S-i]`, `[K-Vb]w` are a password's).
MARKUP = Lazy(r"(?<![A-Za-z0-9])[a-z_][a-z0-9_]+\([^()]*\)"
              r"|</?(?:[A-Za-z][a-z]*(?:-[a-z]+)*|h[1-6])>"
              r"|&(?:#\w+|[A-Za-z]{2,});|&\w+=|^&|^[\w.]*<[A-Za-z][A-Za-z_-]{3,}$"
              r"|(?<![A-Za-z0-9])0x[0-9A-Fa-f]+(?![A-Za-z0-9])"
              r"|\[\^?(?:[a-z]-[a-z]|[A-Z]-[A-Z]|[0-9]-[0-9])+[\w-]*\](?:[{*+?]|\Z)")
# A password made to a policy, wherever it stands: both cases, a digit, signs between its parts
# (`P@ssw0rdSummer`, `Borshch#Smak9`); not a sigil's word (`^Prod1^Prod2`), nor in a path, scope,
# setting, variable or place-holder (`/ :: = { < >` around it), nor in a link (scan_secrets).
_POLICY_SIGNS = "!#$%&*?@^~"  # what joins a policy password's parts
POLICY_TOKEN = Lazy(r"(?<![^\W_]|[" + _POLICY_SIGNS + r"_+./<=>\\{-])(?<!::)"
                    r"(?=[\w.+-]{1,62}(?:[" + _POLICY_SIGNS + r"]+[^\W_]|! [a-z]))"
                    r"[^\W_][\w" + _POLICY_SIGNS + r".+-]{7,63}(?![\w" + _POLICY_SIGNS + r".+-])"
                    r"(?![/\\=]|[:>]\S)")
POLICY_SIGN = Lazy(r"(?<=\w)[" + _POLICY_SIGNS + r"]+(?=[^\W_])")
# Forms of that shape that are no password. Held, since passwords are made so too: a name and a
# number joined by `#` (`Rizky#0427`: `Summer#2024`), a key's capital prefix (`USER#Alice42`:
# `AAA#000aQz7x`), a spreadsheet's cell (`Sheet2!B4`: `Sunny24!AB12`).
POLICY_NOT = Lazy("|".join((
    r"[a-z][\w.+-]+@[A-Za-z][\w.-]*|[A-Za-z][\w.+-]+@[\w-]+[.-][\w.-]*",  # a user at a host
    r".*@\d+(?:\.\d+)?(?:[kMG]?Hz|[mkM]?[AVW]|fps)",  # a rate, a rating (`M4F@168MHz`, `3.3V@1A`)
    r".*[@~^=]+(?:[A-Z]+_)?v?\d+\.\d.*",  # a version (`Next@4.0.3`, `~=0.6`, `@@GLIBC_2.2.5`)
    r".*(?:\.[a-z]{1,4}#|#[\w-]+\.[a-z]).*|.*\.[a-z]{2,4}",  # an anchor, a file (`R&D_v2.pdf`)
    r"(?:[a-z]\w*\.)*[A-Z]\w*(?:\$\w+)+\.[a-z]\w*|[A-Z]\w*\$\d{1,2}",  # a nested class (`A$B2.run`)
    r"[A-Za-z][\w-]*#\d{1,2}",  # a worker's index (`Worker#3`; `Summer#2024` is held)
    r".*\.\..*|.*~[1-9]\d?",  # git's revisions (`v2.4.1..HEAD~1`)
    r".*@(?=[0-9a-f]*[a-f])[0-9a-f]{6,8}",  # an object's identity (Java's `Cart@6d06d69c`)
    r".*(?:_%|%_|%$).*",  # a pattern of SQL's LIKE (`Order_%2023%`)
    r"\d+[*^][A-Za-z][\w.]*|.*[*^+]\d+\.\d.*",  # a formula (`2*time.Minute`, `Hp*2.5+Armor3`)
    r".*[&|^]0x[0-9A-Fa-f]+",  # a bit mask (`Flags&0x04`)
    r".*%[2-7][0-9A-Fa-f].*|.*%\w.*%\w.*",  # an escape of a sign (`%2F`), a format (`%Y%m%d`)
    r".*\*\*.*")))  # Markdown's emphasis glued to a word (`us-west-2**To`)
RUNS_ON = Lazy(r" [a-z]")  # a sentence goes on after a token's "!" ("set it to Qwerty123! again")
SIGNED_MIN = 9  # letters and digits of a signed value that are judged (12 with three signs)
# A percent escape: an ASCII character's, or a UTF-8 character's first two bytes (`%C3%A9`); a
# signed token holding one is judged decoded (secret_view), and `%C9` alone is a password's sign.
PERCENT_ESCAPE = Lazy(r"%[2-7][0-9A-Fa-f]|%[C-Fc-f][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]")
# A printf conversion: zero-padded (`0x%02X`), or one ending the token or before a sign (`%s:`).
PRINTF_SPEC = Lazy(r"%0\d+[xXdiu]|%[-+]?\d*(?:\.\d+)?[sdfx](?![A-Za-z0-9])")
# A word, maybe numbered: with a vowel (`Parser`, `API`, `type1`) or short lower-case (`cfg`).
WORD_PIECE = Lazy(r"(?:[a-z]{1,3}|(?=.*[AEIOUYaeiouy])(?:[a-z]+|[A-Z][a-z]+|[A-Z]+))[0-9]*")
UUID = Lazy(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
ULID = Lazy(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
UUID7 = Lazy(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-7[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}"
             r"-[0-9a-fA-F]{12}")
# A ULID or a UUIDv7 names its own time: one of these years is an id, whatever word stands
# nearest it but a credential's ("issued <ULID> as its API key": a service may make its keys so).
ULID_YEARS = (2016, 2040)
# A KSUID (27 base62 characters, seconds since its epoch in its first 32 bits) names its time too,
# but one random base62 run in six would read as a date of those years: only an id's word names it.
KSUID = Lazy(r"[0-9A-Za-z]{27}")
KSUID_EPOCH = 1_400_000_000
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
PUBLIC_KEY_HEAD = 64  # base64 characters read of a DER key: its headers sit in the first 48 bytes
CROCKFORD_DIGITS = str.maketrans("ABCDEFGHJKMNPQRSTVWXYZ", "abcdefghijklmnopqrstuv")
DIGEST_LABEL = Lazy(r"(?i)(?:sha(?:1|224|256|384|512)|md5)-")
# A digest's forms: hex, or base64 of 16, 20, 32, 48 or 64 bytes (`SHA256:<43>`); a token of
# another form is no digest, whatever word names it (a label, `sha512-`, is DIGEST_LABEL's).
DIGEST_BASE64_LENGTHS = frozenset({22, 27, 43, 64, 86})
# ... but a Windows password's hash logs in as the password does (pass-the-hash): its LM and NT
# hashes paired (pwdump's `LM:NT`, impacket's `-hashes LM:NT`), one named NT's or LM's, or a
# Kerberos key after its type (secretsdump's `krbtgt:aes256-cts-hmac-sha1-96:<hex>`).
KERBEROS_KEY_TYPE = Lazy(r"(?i)(?:aes(?:128|256)-cts-hmac-sha\d+-\d+|rc4[-_]hmac(?:-md5)?|des-cbc-md5)"
                         r":[\"']?\Z")
PASSWORD_HASH_PAIR = Lazy(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{32}[\"']?:[\"']?[0-9A-Fa-f]{32}"
                          r"(?![0-9A-Fa-f])")
PASSWORD_HASH_NAMED = Lazy(r"(?<![a-z0-9])(?:ntlm|net-?ntlm(?:v[12])?|nt|lm)[ _-]?\Z")
# harmless_context: the naming word nearest the token in its clause decides: a commit word (or
# `owner/repo@`) names hex, an id word a UUID, ULID or hex, a digest word a digest's form; an
# opaque value's (a content id, cursor, nonce, OAuth state) any form, "public key" and an OAuth
# "client id" (the public half of a client's pair) anything; a signature is a secret's.
# The residual risk: a credential right after such a word, in the form it names, is printed.
# A commit's words include git's own output ("HEAD is now at <sha>").
# Groups: commit, id, session (a UUID or ULID: a cookie's session id is its login), digest,
# public, secret (Vault's `secret_id` is a credential, a PIN's word one nearer than a public
# thing's: `public_door_admin_pin`), opaque.
NAMING_WORD = Lazy(
    r"(?<![a-z0-9])(?:(commit\w*|commici\w*|revisions?|revs?|changesets?|sha1?|shas|rebase[ds]?|"
    r"cherry-pick(?:ed)?|revert(?:ed)?|"
    r"reset|checkout|bisect|squash(?:ed)?|merge[ds]?|blame|git (?:show|log|diff|cat-file)|"
    r"blob|tree|(?<![^\n])parent(?= )|"
    r"submodules?|pinned|"
    r"tags?|refs?|references?|head|[\w-]+/[\w.-]+@)|"
    r"(ids?|[a-z]*[gu]uids?|ulids?|ksuids?|identifiers?|clsids?|class|interface|"
    r"rows?|records?|transactions?|"
    r"tenants?|"
    r"(?:" + "|".join(ID_KEYS) + r")[ _-]?keys?|objects?|oids?|"
    r"requests?|req|rid|reqid|traces?|traceparent|checkpoints?|conversations?|subscriptions?|"
    r"uids?|events?|"
    r"spans?|templates?|kid|tx(?:id|hash)?(?![_-])|containers?|serials?|snapshots?|"
    r"deployments?|artifacts?|layers?|pods?|pvcs?)|"
    r"((?:sessions?|sess)(?:[ _-]?ids?)?|sids?)|"
    r"([a-z]*hash(?:es|\d+)?|checksums?|digests?|(?:finger|thumb)prints?|"
    r"(?:sha(?:224|256|384|512)|md5)(?:sum)?|"
    r"integrity|verif(?:y|ies|ied|ication)|h1(?=:)|zh(?=:)|sha1?sum|shasum|xxh\d*|crc\d*c?|"
    r"blake\d*[bs]?|"
    r"b3sum|murmur\w*)|"
    r"(public(?:[ _-]?(?:keys?|ids?))?|pub(?:[ _-]?keys?)?|publishable(?:[ _-]?keys?)?|"
    r"site[ _-]?keys?|client[ _-]?ids?|(?:wallet[ _-]?)?address(?:es)?|"  # one pays to it
    r"ssh-(?:rsa|ed25519|dss)|"
    r"ecdsa-sha2-\w+|data:[\w.+-]+/[\w.+-]+;base64)|"
    r"(secret[ _-]?id|" + literal_trie(SECRET_WORDS) + r"|signing|signature|sig|hmac|pin|passcode)|"
    r"(btih|etags?|cids?|cidv[01]|cursors?|nonces?|state|(?:code[ _])?challenge))"
    r"s?(?![a-z0-9]|-[a-z]+(?![a-z0-9]))"  # no part of a name (`checkout-web`)
    r"|(提交|коммит\w*|коміт\w*|커밋|コミット|कमिट)"
    r"|(编号|标识|号|请求|リクエスト|запрос\w*|solicitud|anfrage|requête|"
    r"識別子|식별자|아이디|идентификатор\w*|ідентифікатор\w*|identifiant|"
    r"identificador|identyfikator\w*|identifikátor\w*|azonosító\w*|tunniste\w*|định danh|kennung|"
    r"kimli[kğg]\w*|شناسه|"
    r"מזהה|معرّ?ف|mã(?! bí mật)|trazas?|numbers?|nummer\w*|número|numéro|numero|n°|номер\w*|번호|numaras[ıi])"
    r"|((?:会话|セッション|сесси[яиюей]|sesión|sitzung)(?:\s*id)?)"
    r"|(哈希|校验和|摘要|指纹|prüfsumme|チェックサム|ハッシュ|체크섬|해시|empreintes?|huellas?|fingerabdruck|"
    r"контрольн\w* сумм\w*|х[еэ]ш\w*|"
    r"somme de contrôle|suma de (?:control|verificación|comprobación)|soma de verificação)"
    r"|(公钥|公開鍵|공개 ?키|öffentliche\w* schlüssel|clé publique|clave pública|"
    r"chave pública|"
    r"(?:открыт|публичн)\w* ключ\w*|" + PUBLIC_ABROAD + r")"
    r"|(" + SECRET_WORDS_ZH + "|" + SECRET_WORDS_ABROAD + ")"
    # ... and a record's noun, in the languages the probes wrote: an id only said right before it
    r"|(?<![\w-])(jobs?|tasks?|tickets?|invoices?|incidents?|batch(?:es)?|workflows?|pipelines?|"
    r"orders?|captures?|disputes?|refunds?|payouts?|charges?|shipments?|bookings?|reservations?|"
    r"references?|"
    r"d[ée]ploiements?|t[âa]ches?|factures?|idempotence|tareas?|trabajos?|pedidos?|despliegues?|"
    r"auftr[äa]ge?|aufgaben?|bestellungen?|tarefas?|задач\w*|заказ\w*|сборк\w*)(?![\w-])")
# A naming word that names nothing: "commit" as a verb, whose object is what is committed ("never
# commit <token> to ..."), and the idiom "for the record".
NAMES_NOTHING = Lazy(r"(?:\b(?:never|always|not|don't|please|to|must|should|we|i|you|just|then|and"
                     r"|or) commit|\b(?:for|off|on) the record)\Z")
NAMING_FAMILIES = ("commit", "id", "session", "digest", "public", "secret", "opaque",
                   "commit", "id", "session", "digest", "public", "secret", "record")
NAMING_REACH = 40  # characters between a naming word and its token, at most
# A warning to keep the value to oneself names it a secret whatever word names it ("the
# application ID is <hex>, never put it in a public repo"): no harmless context holds beside one.
SECRECY = Lazy(r"(?i)\b(?:(?:don't|do not|never|not to) (?:share|publish|post|paste|leak|expose|"
               r"push|commit|put|write) (?:it|this|that|them)\b|"
               r"keep (?:it|this|that) (?:secret|private)|(?:strictly )?confidential|"
               r"nicht (?:teilen|weitergeben|veröffentlichen)|geheim halten|"
               r"no (?:la|lo) compartas|ne (?:la|le) partage|não (?:a|o) compartilhe|"
               r"nie udostępniaj|никому не (?:давай|показывай))|"
               r"公開リポジトリ|書かないで|共有しないで|不要(?:泄露|外传|公开|分享|提交)|공유하지 마")
SECRECY_REACH = 80  # characters around a token read for such a warning
# An id's word said right before a value (PROSE_NAMED: a name's last word too, `BUILD_ID`, and
# a copula or a colon after it, not a quoted key's: `"id": "..."`) names any form up to this
# length (a KSUID's 27, a Salesforce id's 18, a JWKS kid's 22) and a 32-byte public key's base58
# (BASE58_KEY); a longer one only in an id's forms (hex, UUID, ULID): keys run longer.
ID_FORM_MAX = 28
# A record's id as its own noun's letters and an underscore open it (prefix_named), the noun
# right before it.
ID_PREFIX = Lazy(r"([a-z]{2,8})_[A-Za-z0-9]{8," + str(ID_FORM_MAX) + r"}")
NOUN_BEFORE = Lazy(r"([^\W\d_]{3,})[ \t]+\Z")
PROSE_NAMED = Lazy(r"(?:[^\w\0]|_)?[^\W\d_]+(?:\s*(?:(?<=\s)(?:" + _IS + r")|[:=]))?[\s`'\"“«(]*")
BASE58_KEY = Lazy(r"[1-9A-HJ-NP-Za-km-z]{43,44}")
# "Public" alone after its token is said of it, not its name, and may be denied or wished for
# ("never make <token> public"): there a public key's noun names it (`public key`, `client id`).
BARE_PUBLIC = frozenset({"public", "publics", "pub", "pubs"})
PUBLIC_THING = Lazy(r" (?!(?:for|to|with|from|in|into|on|at|by|of|per|via|and|or|but|again|anymore|"
                    r"yet|now|ever|soon|later)\b)[a-z]")  # "<nanoid> as the public slug": a noun
NEGATED = Lazy(r"(?:\bnot|n't|\bno)\s+(?:an?\s+|the\s+)?\Z")  # a naming word denied before it
DENIAL_REACH = 12  # characters before a naming word read for its denial or an idiom (NAMES_NOTHING)
# An id's word followed by its own value names that value, not a token after it ("project id 4411
# is <token>", "<token> (org id org-123)").
OWN_VALUE = Lazy(r"[\s:=#(]*[\w.-]*\d")
FILE_EXTENSION = Lazy(r"\.[A-Za-z][A-Za-z0-9]{0,5}(?![A-Za-z0-9])")
# Names any token: a checksum listed beside its file (`sha256sum`'s `HEX  dist/name.tar.xz`),
# and a host's first label (`<client id>.apps.googleusercontent.com`).
LISTED_FILE = Lazy(r" [ *][\w.+/-]+\.[A-Za-z][A-Za-z0-9]{0,5}(?![\w.-])"
                   r"|(?:\.[a-z0-9-]+)+\.[a-z]{2,}(?![\w.-])")
FILE_FRAGMENT = Lazy(r"\.[A-Za-z][A-Za-z0-9]{0,5}#$")
# Git's range of two revisions (`A..B`, `A...B`): both ends are commits, whatever names them.
RANGE_REACH = 67  # characters from one end of a range to the other: 64 of a SHA-256 and `...`
REVISION_RANGE = Lazy(r"(?<![\w.])[0-9a-fA-F]{7,64}\.{2,3}[0-9a-fA-F]{7,64}(?![\w.])")
# A URL query's value is named by its parameter alone (`?session_id=` an id, `?t=` nothing).
QUERY_NAME = Lazy(r"[?&;]([a-z0-9_.-]{0,40})=$")
# A Markdown table's header names its column (column_header), the line above this rule line.
TABLE_RULE = Lazy(r"\|?(?:\s*:?-{3,}:?\s*\|)+(?:\s*:?-{3,}:?\s*)?")
# A webhook's path piece after which its secret stands (hook_secret), and where a piece turns
# between letters and digits (`64htzp3` twice; a word and a version, `python3`, once).
HOOK_PART = Lazy(r"(?:incoming_?)?(?:web|build_)?hooks?(?:b2)?", re.I)
# Words joined with a number, as a passphrase is made (`creeper_aw_man_42`, `nixos-rocks-2024`):
# three words and any number, or two and two digits: a hook's path (its event's name is a word
# or two without one: `/hooks/github`, `/webhooks/slack-events`).
HOOK_PHRASE = Lazy(r"[a-z]{3,}(?:(?:[-_.][a-z]{2,}){2,}[-_.]?\d+|[-_.][a-z]{2,}[-_.]?\d{2,})")
CLASS_TURN = Lazy(r"(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])")
HOOK_KEY = Lazy(r"(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{6,}", re.I)  # letters and a digit
CAMEL_HUMP = Lazy(r"(?<=[a-z0-9])(?=[A-Z])")  # where camelCase's words meet (`AccessorID`)
# A clause's end between a naming word and its token; an abbreviation's dot ends none ("e.g.").
CLAUSE_BREAK = Lazy(r"(?:(?<!\be\.g)(?<!\bi\.e)(?<!\bz\.b)(?<!\bvs)\.|[;!?。；！？\n])\s|[;。；！？\n]")
# A naming word after its token names it across a copula or a bracket ("<uuid> is the request id",
# "<sha> (commit)"); across a preposition or a conjunction it names another thing ("<token> for
# the events API"), and so across a key's `:` or `=` (`{"k": "<token>", "id": 8}`), a command's
# option (`-H "Authorization: <token>" -d '{"event": ...}'`) or a clause's
# comma ("<hex>, ne la committe pas"; not an aside's, right before its word: "<hex>, which is the
# hash", "<sha>, the commit"); but a credential's word there still withholds ("paste <hex> into
# the API key").
NAMES_ANOTHER = Lazy(r"\b(?:for|to|with|from|in|into|on|at|by|of|per|via|and|or|but)\b|[:=]"
                     r"|\s--?[a-z][\w-]*\s")
# ... and a clause's comma, but an aside's, its words right before the naming word.
ASIDE = Lazy(r",\s*(?:(?:which|that) (?:is|was) (?:just |only )?(?:(?:the|a|an|its) )?|"
             r"i\.e\.,? (?:the )?|aka |(?:the|a|an|its) )(?:[\w-]+(?:['’]s)? )?\Z")
# secret_view reads a text NFKC-folded, without format characters, percent-escapes, JSON's
# `\uXXXX` (`\u5bc6\u7801` is 密码), HTML's character references (SpecStory's `&#96;`) and
# Markdown's escapes inside a word (`sk\_live`, `a\|b` in a table) decoded, so a disguised token
# is still found and an escape glued to a word is no token; only such texts need it.
CHAR_REFERENCE = r"&#(?:\d{2,7}|x[0-9A-Fa-f]{2,6});|&(?:quot|amp|lt|gt|apos);"
MARKDOWN_ESCAPE = r"(?<=[A-Za-z0-9])\\[_|*~](?=[A-Za-z0-9])"
VIEW_CHANGE = Lazy(r"(?:[A-Za-z](?=[\u0300-\u036f]))?[^\x00-\x7f]+|"  # (with a mark's letter)
                   + PERCENT_ESCAPE.pattern + r"|\\u(?!00[01])[0-9A-Fa-f]{4}|"
                   + CHAR_REFERENCE + "|" + MARKDOWN_ESCAPE)
# ... a space's escape too (a phrase's words, `%20`, `&#32;`), but for a link's own: its words
# stay one run, as the link is one (`/wiki/Implementation%20Status#status-12`).
LINK = Lazy(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://\S+")
# Unicode's format characters (category Cf), as of Unicode 15.
FORMAT_CHAR = Lazy("[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
                   "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
                   "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]")
# A token cut by a line break in a message is rejoined (scan_secrets), not where the break ends a
# record: the next line opens with a key (`NAME=`, `HostId: `); where a line holds columns (a
# table; not code's comment after two spaces, `"..."  # the bot`), only by a name beside it.
ASSIGNS = Lazy(r"[A-Za-z_][\w.-]*=|[\w.-]+[ \t]*:(?:[ \t]|$)", re.M)
COLUMNS = Lazy(r"\S(?:\t| {2,})(?!#|//)\S")
# A base32 key written in groups of four, as authenticator apps show a setup key: rejoined.
# ... and a product or licence key (`ENT-A33D-D9B1-1F3B-4335`) or recovery codes (`ac0f4-0a476
# abfbe-ce3e3`): groups of four or five letters and digits of one case joined by dashes (capitals'
# by dots too: `E93F.8WTM.TJ8Q.TWZK`); digits in five groups or more are a serial's (digit_serial;
# four: an order number).
_KEY_GROUPS = "|".join([rf"(?:[A-Z][A-Z0-9]{{1,4}}-)?{g}(?:-{g}){{3,}}"  # a prefix, four groups
                        rf"|{g}-{g}(?: {g}-{g})+"  # groups in pairs: recovery codes
                        for g in ("[A-Z0-9]{4,5}", "[a-z0-9]{4,5}")]  # of one case
                       + [r"[A-Z0-9]{5}(?:-[A-Z0-9]{5}){2}"  # three of five capitals: a game's
                          r"|[A-Z0-9]{4,5}(?:\.[A-Z0-9]{4,5}){3,}"])  # four capital groups, dotted
# ... and groups of one length each mixing letters and digits, two or more (`K7QP-M2XD-9RTW`,
# `qz7w-4nd8`), where half change between letters and digits twice or more (not names'
# `es2020-node18`, `h264-aac1`) and a letter is past hex's (mixed_groups): a code's value, after
# its word (CODE_NUMBER), as pods' and sizes' names take the same form (`web01-7d9f8-x2k4p`).
_MIXED_GROUP = r"(?=[a-z]*\d)(?=\d*[a-z])[a-z0-9]{%d}"
_MIXED_GROUPS = (r"(?=[A-Za-z0-9]{4,6}-[A-Za-z0-9])(?:"  # a quick look first
                 + "|".join(rf"(?i:{_MIXED_GROUP % n}(?:-{_MIXED_GROUP % n})+)" for n in (4, 5, 6))
                 + ")")
GROUPED = Lazy(r"(?<![A-Za-z0-9_-])(?:[a-z2-7]{4}(?: [a-z2-7]{4}){3,}"
               r"|[A-Z2-7]{4}(?: [A-Z2-7]{4}){3,}|"
               + _KEY_GROUPS + r")(?![A-Za-z0-9_-])")  # glued to CJK too
# ... and a key's two halves joined by a colon (`id:secret`, as bundler and basic auth hold them),
# both generated (letters and digits); or three or more parts joined by dots, each of two
# character classes (`iyCu4msZ.NCmlsSyg.ZhzTWsNw`; not `React.useState`, a name's words).
_MIXED_PART = r"(?:(?=[a-z\d]*[A-Z])(?=[A-Z\d]*[a-z])|" \
              r"(?=[a-zA-Z]*\d)(?=\d*[a-zA-Z]))[A-Za-z0-9]{6,}"
PAIRED = Lazy(r"(?<![\w:/.@-])(?=[a-zA-Z]*\d)(?=\d*[a-zA-Z])[A-Za-z0-9]{8,}:"
              r"(?=[a-zA-Z_-]*\d)(?=[\d_-]*[a-zA-Z])"
              r"[A-Za-z0-9_-]{8,}(?![\w:/@-])|"
              r"(?<![\w:/.@-])" + _MIXED_PART + r"(?:\." + _MIXED_PART + r"){2,}(?![\w/@-]|\.\w)")
# A number in dashed groups of one length after a code's word in any language but English
# ("Резервни кôд ... је 5831-0942-7716"; not a list of numbers, a phone's or a ZIP+4), or groups
# mixing letters and digits ("Код відновлення: K7QP-M2XD-9RTW"): a backup code, a licence's
# serial. The value is found first (rare; a character no word holds opens its pattern, quick to
# look for), then the code's word in the 60 characters before it (CODE_WORD_BEFORE).
CODE_NUMBER = Lazy(r"[^\w-]((?!" + _YEAR + "-" + _YEAR + r"(?!\d))\d{3,5}(?:-\d{3,5}){1,5}|"
                   + _MIXED_GROUPS + r")(?![\w-])")
CODE_WORD_BEFORE = Lazy(_CODE_WORD + r"[^\n.!?0-9\"{}\[\];]{0,40}?[\"'`「«(]?\Z")
# Each rejoined shape, and the characters that join its parts.
REJOINED = ((GROUPED, str.maketrans("", "", " -.")), (PAIRED, str.maketrans("", "", ":.")))
TOKEN_CHARS = string.ascii_letters + string.digits + "+/=_-"  # what a wrapped token is made of
NEXT_RUN = Lazy(r"[^\s\"'`]+")  # the run that opens a line, a cut value's rest (cut_value)
# ... not where the line opens something of its own: a table's row, a mention, a bracket, a
# comment, a variable, a number or version (`v1.2.3`, `main.go:42:`), a path or a call.
NOT_VALUE_REST = Lazy(r"[|@(\[<{#>$\\]|v?\d+(?:[.:]\d+)*:?\Z|.*[/\\(]")
# A value wrapped after a credential's word, each side WRAP_PIECE characters or more, is read
# with its two lines joined (a shorter side is a line's end: `len 9` / `min-passphrase-...`).
WRAP_NAMED = Lazy(literal_trie((*SECRET_WORDS, *PASSWORD_HINTS.split("|"),
                                *SECRET_WORDS_ZH.split("|"))))
WRAP_PIECE = 4
# ... and where a phrase across one may stand: after a password's or a phrase's name, a recovery
# phrase's, or a wallet's (not a key's or a token's: a token a break splits is WRAPPED's).
PHRASE_NAMED = Lazy(literal_trie((*PASSWORD_NAMES.split("|"), *SECRET_WORDS_ZH.split("|"),
                                  "phrase", "frase", "fraza", "фраза", "wachtzin", "seed",
                                  "mnemonic", "words", "wallet", "mots", "parole", "palavras",
                                  "フレーズ", "문구", "助记")))
WRAP_CONTEXT = 80  # characters read either side of a wrapped value: a name stands near it
WRAP_JOINS = 32  # breaks so read in one text: more is a pasted log's, not a value's
WRAPPED = Lazy(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]+\n[A-Za-z0-9+/=_-]+(?![A-Za-z0-9+/=_-])")
# ... and a phrase a line break wraps (a paste hard-wrapped at a terminal's width, a recovery
# phrase or passphrase among its words): read with the break as the space it stands for, or as
# nothing where it cuts a word (break_readings), by what a rule finds across it near a
# credential's word or twelve words (wrapped_phrases).
LINE_WRAP = Lazy(r"(?<=[^\W_]|,)[ \t]*\n[ \t]*(?=[^\W_])")  # (not a sentence's end, a list's item)
WORD_CUT = 3  # letters of a word's piece: fewer is no word of a phrase (BIP39's have three or more)
WRAP_WIDTH = 40  # characters of a line a wrap ends, at least: a terminal's or an editor's width
CJK_LETTER = Lazy(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7a3]")  # (a word of two is whole)
WORD_END, WORD_START = Lazy(r"[^\W_]+\Z"), Lazy(r"[^\W_]+")
WRAP_BEFORE, WRAP_AFTER = 120, 400  # characters before and after a credential's word or twelve
# words that such a phrase, its name and its lead may take (33 words of nine letters)
QUOTE_WRAPPED = Lazy(r"([\"'])[^\"'\n]*\n[^\"'\n]*\1")  # a quoted value a line break split
WRAPPED_URL = Lazy(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://\S*\n\S+")  # a link a break split
# ... whose line ends in a user and password (`smb://CORP;jdoe:pw`), not a host and port: the
# `@host` opening the next line (a host's name, not a mention or a decorator) is then its own.
OPEN_USERINFO = Lazy(r"://[^/\s@]*:(?![0-9]*[.,;:!?]*$)[^/\s@]*$")
HOST_AFTER = Lazy(r"@(?:localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)(?::[0-9]+)?(?![\w.(-])")
# ... and a signed value (SIGNED_TOKEN) so split: `EMnY9tlicZ)L` at a line's end, `hC*~UJwn` next;
# not where a line ends as a statement or a group does (_CLOSER), as no token ends.
WRAPPED_SIGNED = Lazy(r"(?<!" + _SIGNED_CHAR + r")" + _SIGNED_CHAR + r"+(?<!" + _CLOSER + r")\n"
                      + _SIGNED_CHAR + r"+(?!" + _SIGNED_CHAR + r")", re.A)
# A base64 run long enough to hide a credential: decoded and scanned for the named kinds.
BASE64_RUN = Lazy(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/=])")
# Text that holds no credential whatever it looks like: PEM public keys, certificates, signatures
# (also in XML), Mapbox tokens, ARNs, sops and ansible-vault values, DKIM, password hashes (bcrypt,
# argon2 also as Jupyter writes it, crypt's MD5, Apache's `$apr1$`, SCRAM), braced GUIDs, hashed
# `known_hosts` hosts, OpenPGP key ids ("RSA key <hex>").
PUBLIC_SPAN = Lazy(r"-----BEGIN (?![A-Z ]*PRIVATE)[A-Z0-9 ]*(?:PUBLIC KEY|CERTIFICATE|SIGNATURE)"
                   r"[A-Z ]*-----.*?(?:-----END[^\n]*|(?=-----BEGIN)|\Z)"
                   r"|X509Certificate>[^<]*|(?<![\w.])pk\.eyJ[\w.-]+"
                   r"|arn:aws[\w-]*:[\w-]+:[\w-]*:\d*:\S+|ENC\[[^\]\n]*\]"
                   r"|\$ANSIBLE_VAULT;[^\n]*(?:\n *[0-9a-f]+)+|v=DKIM1;[^\"\n]*(?:\"\s+\"[^\"\n]*)*"
                   r"|\|1\|[A-Za-z0-9+/]+=*\|[A-Za-z0-9+/]+=*"
                   r"|(?<![\w!#%&*@^~$])"  # a password hash, not glued to a password
                   r"(?:argon2:)?\$(?:2[abxy]?|argon2(?:id|i|d)|[1567y]|gy|scrypt|pbkdf2[\w-]*"
                   r"|apr1|md5|sha1)"
                   r"(?:\$[\w./+=,-]+){2,}"
                   r"|SCRAM-SHA-256\$[^\s'\"|]+|\{" + UUID.pattern + r"\}"
                   r"|(?i:\b(?:rsa|dsa|ecdsa|eddsa|ed25519|cv25519) key )(?:0x)?[0-9A-Fa-f]{8,40}\b", re.S)
# Public by design or harmless by form: publishable keys (PostHog's a page embeds), age, SSH,
# IPFS, Ethereum (a private key is 64 hex), Bitcoin and nostr addresses, 64-bit hex, AWS ids,
# Stripe's and Anthropic's object ids in both cases (Stripe's secrets are `sk_`, `rk_`,
# `whsec_`; `ch_<hex>` is no Stripe id; a transcript's `msg_01...`, `toolu_01...`), UPS
# tracking, a Nix store path (a hash of the build's inputs), a Kubernetes pod's name (no
# vowels), base64 images, PDFs.
PUBLIC_VALUE = Lazy(r"pk_(?:live|test)_|pk\.eyJ|phc_[A-Za-z0-9]{32,}$|age1[02-9ac-hj-np-z]{58}"
                    r"|ssh-(?:rsa|ed25519|dss)"
                    r"|iVBORw0KGgo|/9j/|R0lGOD|JVBERi0"
                    r"|0[xX][0-9a-fA-F]{1,16}$"
                    r"|ecdsa-sha2-"
                    r"|Qm[1-9A-HJ-NP-Za-km-z]{44}(?![\w-])|baf[a-z2-7]{50,}(?![\w-])"
                    r"|0x[0-9a-fA-F]{40}$"
                    r"|(?:bc|tb|ltc)1[02-9ac-hj-np-z]{25,87}$|npub1[02-9ac-hj-np-z]{58}$"
                    r"|(?:ami|sg|vpc|subnet|vol|snap|eni|igw|rtb|nat|lt|tgw|vpce|i)-[0-9a-f]{8}"
                    r"(?:[0-9a-f]{9})?$"
                    r"|A(?:IDA|ROA|NPA|NVA|GPA|IPA)[A-Z0-9]{16,17}$"
                    r"|(?:cus|evt|pi|req|ch|in|sub|price|prod|txn|acct|pm|seti|po|tr|py|msg|toolu)"
                    r"_(?=[a-z0-9]*[A-Z])(?=[A-Z0-9]*[a-z])[A-Za-z0-9]{8,}$"
                    r"|1Z[0-9A-Z]{16}$|nix/store/[0-9a-df-np-sv-z]{32}-"
                    r"|[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*-[b-df-hj-np-tv-z2-9]{8,10}"
                    r"-[b-df-hj-np-tv-z2-9]{5}$")
# Values that are no secret wherever they stand, a class a line: stand-ins and their words, an
# issue's number, variables and templates, files, secret stores and tags, names, code.
PLACEHOLDER = Lazy("^(?:" + "|".join((
    r"(?:\S*:|basic |bearer )?<.*|x{3,}|\*{2,}.*|\S*(?:\.{3}|…)\S{0,4}|pass|password|secret"
    r"|change[-_]?(?:me|it)(?-i:[-_][a-z]+)*"
    r"|redacted|filtered|\([a-z]+"  # `(sensitive value)`: a tool's word in parentheses
    r"|motdepasse|" + _NAMES_STANDING_IN
    + r"|\[[a-z][a-z0-9 _-]*\]?|none|null|true|false|n/a|tbd|todo|empty|unknown",
    r"(?:your|my|the|some|example|dummy|fake|test|sample)"
    r"(?:[-_.]\S*|(?:password|secret|token|key|here)\S*)?",
    r"#\d{1,6}\W*|[$#]\{.*|\$\$?\w+|\$\(.*|\$env:\w+|%[A-Za-z_]+%|\{\{.*|\{[a-z_0-9][\w.]*\}|:'?\w+'?;?|\?",
    r"\.\.?/\S*|/[^/\s]+/\S*|[a-z_]+(?:/[a-z_]+)+|[\w.-]+(?:/[\w.-]+)+\.[A-Za-z][A-Za-z0-9]{0,4}"
    r"|@?(?:env|file|fd|keychain):\S+|[a-z]+:/\S*|[a-z+]+://.*|[$%@][\w.:]*[({\[].*"
    r"|enc\[.*|![a-z]+",
    r"(?-i:_*[A-ZÀ-ÖØ-Þ][A-ZÀ-ÖØ-Þ0-9]*(?:_[A-ZÀ-ÖØ-Þ0-9]*)+)|[a-z]+(?:_[a-z]+)+",
    r"\w*env\(.*|[a-z_][\w.:]*!?[(\[].*|[a-z_]+(?:(?:\.|::)[a-z_]+)+(?:[(\[].*)?!?",
    r"[a-z_]+(?::[^|\s]+)?(?:\|[a-z_]+(?::[^|\s]+)?)+",  # a validator's rules (`required|min:8`)
)) + ")$", re.I)
# A password's word as a whole part of a field's name (about_a_password; `PasswordInput`).
PASSWORD_PARTS = frozenset({"password", "passwd", "pass", "pwd", "secret", "passphrase"})
# What gives a quoted phrase as a password's value: the word alone, a colon or `=`, a copula or
# "set to" ending the words between ("the passphrase is '...'"; not "the hint reads '...'").
PHRASE_JOIN = Lazy(r"(?i)(?:^\S+|[:：=—–]|(?<!\w)(?:" + _IS + r"|set to|changed to|to|是|为|為|"
                   + PASSWORD_NAMES + r")(?!\w))\s*$")
PASSWORD_HEADER = Lazy(r"(?:" + PASSWORD_NAMES + r"|pass|secret|密码|口令|密碼)s?")
PASSWORD_KEY = Lazy(r"(?:[\w.-]*[_. -])?(?:password|passwd|passphrase|pwd|secret)")  # a row's
VALUE_HEADER = Lazy(r"values?|wert|valeur|valor|值|内容|値|setting|default|example")  # its column
SNAKE_WORDS = Lazy(r"[a-z]+(?:_[a-z]+)+")
SETTING_WORDS = Lazy(r"[a-z]+(?:[_-][a-z]+)*")  # a setting's words in small letters (`created_at`)
# A message about a password, as a form or a validator holds one: four words or more ending in a
# stop ("Must contain a digit and a capital."); "Winter is coming 2024" is one.
MESSAGE = Lazy(r"\S+(?: \S+){3,}[.!?…]")
# A field's name about one: a password's word as one of its parts (`current-password`).
NAME_PARTS = Lazy(r"[-_ ]|(?<=[a-z])(?=[A-Z])")
COMMAND_OPTION = Lazy(r"(?<!\S)--?[A-Za-z]")  # a command line's option (`ssh-keygen -p -f ...`)
NAMED_PASSWORD = Lazy(r"(?i)(?<![^\W\d_])(?:" + PASSWORD_NAMES + r")(?![^\W\d_])")  # as a word
RESOURCE_NAME = Lazy(r"[a-z]+\d*(?:-(?:[a-z]+\d*|\d+))+")  # a resource's name (`db-credentials`)
# Three words or more joined by dashes (`correct-horse-battery`) or, in quotes, by spaces, in small
# letters, as passphrases are made (a title or a label has a capital: "Scheduled testing").
PASSPHRASE = Lazy(r"[a-z]{3,}(?:-[a-z]{3,}){2,}|[a-z0-9]+(?: [a-z0-9]+){2,}")
# A setting's number, with a unit of time at most (`1800`, `30s`), under a name in snake case of
# two pieces or more (`PASSWORD_RESET_TIMEOUT`, `max_age`): not what a password is set to.
SETTING_NUMBER = Lazy(r"\d+(?:ms|[smhd])?")
SETTING_NAME = Lazy(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
# Where a service listens, a dotted host's or localhost's port (`db.internal:5432`): no password.
HOST_PORT = Lazy(r"(?:localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)+):\d{2,5}")
# A regular expression's syntax: a look-around, a range, `.*`, a class escape.
REGEX_SYNTAX = Lazy(r"\(\?[=!<:]|\[\^?[A-Za-z0-9]-[A-Za-z0-9]|\.[*+]|\\[dwsb]")
# ... and a token that is a pattern whole: a prefix of letters, then classes of characters with a
# range, each counted (`^npm_[A-Za-z0-9]{36}$`, `xoxb-[0-9]{11}-[a-z0-9]+`): what a token looks
# like, which a generated value, with its signs and random runs between, does not spell.
TOKEN_PATTERN = Lazy(r"\^?(?:[A-Za-z]+[_-])*[A-Za-z]*"
                     r"(?:\[\^?[^\]\s]*(?:[a-z]-[a-z]|[A-Z]-[A-Z]|[0-9]-[0-9])[^\]\s]*\]"
                     r"(?:\{\d+(?:,\d*)?\}|[*+?])[_-]?)+\$?")
TYPED_ID = Lazy(r"[A-Za-z]+:\d+")  # a GraphQL node id in base64 (`User:56634`), not `user:pw`
USER_PASSWORD = Lazy(r"[^\s:{\[]+:\S+")  # Basic auth's `user:pw`, not a text (`User-agent: *`)
COOKIE_NAME = Lazy(r"^[A-Za-z][A-Za-z0-9_.-]{0,30}=(?=[A-Za-z0-9+/_-]{16})")
# A value masked or filled (`sk_live_****4242`, `••••••••`, `ghp_XXXX...`, `xoxb-your-token`).
FILLER = Lazy(r"([xX*•●])\1{7}|your[-_]")
MASKED = Lazy(r"[•●*]{3}")  # ... or a value's head before its mask (`sk_test_••••`) holds none
KEY_LINE = Lazy(r"[A-Za-z0-9+/=]{16}")  # a key file's body holds lines of base64
# Documentation example keys (AWS's docs): dropped from bullets like any key; a `note` in lint.
EXAMPLE_SECRET = Lazy(r"EXAMPLE", re.I)
# A password may be letters (a passphrase, 授权码); a token without a digit is more often a name.
PASSWORD_WORD = Lazy(r"(?i)pass|pwd|secret|密码|口令|授权码")
CHOSEN_PASSWORD = Lazy(r"(?!\S*(?:\*\*|\\u00|%[0-9A-Fa-f]{2}))" + _CHOSEN + r"\S{6,}")  # not masked

# Personal data: e-mail addresses but git remotes, noreply and example domains (RFC 2606);
# international and Chinese mobile numbers (bare national ones look like ids). Edges as for tokens.
EMAIL = Lazy(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})"
             r"(?![A-Za-z0-9-])")
NOT_PERSONAL_EMAIL = Lazy(
    r"(?i)(?:^|[.@])(?:example\.(?:com|org|net)|[\w-]+\.(?:example|invalid|test|localhost))$|"
    r"noreply|no-reply")
PHONE = Lazy(
    r"(?<![A-Za-z0-9+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?![A-Za-z0-9])|"
    r"(?<![A-Za-z0-9])(?:\+?86[ -]?)?1[3-9]\d[ -]?\d{4}[ -]?\d{4}(?!\d)")
# Absolute home paths name a person: rewritten to `~/...`, the fact stays, not the name.
HOME_PATH = Lazy(r"(?:(?:/Users/|/home/)[^/\s]+|[A-Za-z]:[\\/]Users[\\/][^\\/\s]+)"
                 r"(?=[\\/\s.,;:)'\"`]|$)")
HOME_HINT = Lazy(r"/Users/|/home/|:[\\/]Users[\\/]")
# Home folders lint does not read as a person (build withholds them all the same): these, a
# role's (ROLE_ACCOUNT) and a service's "-user" (`ec2-user`, `dd-user`; not `jhauser`).
SYSTEM_ACCOUNTS = frozenset(
    "node runner runneradmin vscode codespace codespaces gitpod coder circleci jenkins travis "
    "buildkite-agent vagrant ubuntu debian centos fedora rocky almalinux alpine pi linuxbrew "
    "jovyan airflow gradle deno bun app appuser developer docker www-data git postgres mysql "
    "nginx mambauser containeradministrator containeruser shared public default".split())
SERVICE_USER = Lazy(r"(?i)[-_.]user$")
HOME_PLACEHOLDER = Lazy(r"(?i)^(?:you|yours?|me|my|user(?:name)?|name|someone|foo|bar|x+|all users)$|^your|"
                        r"[<>{}$%*…]|\.\.\.|^\.\.?$")
# Role and test accounts (`sysadmin@`, `test1@`, `/home/admin`), no person's: lint passes them.
ROLE_ACCOUNT = Lazy(r"(?i)(?:admin|administrator|sysadmin|root|superuser|test|tester|testuser|demo|user|guest|"
                    r"support|info|contact|hello|team|ops|devops|security|billing|sales|help|dev|qa|staff|"
                    r"webmaster|postmaster|hostmaster|abuse|alerts|notifications|mailer-daemon|nobody)\d*")

# Invisible text: escapes, controls, surrogates and zero-width debris are cleaned, so the reviewer
# reads what is applied; a bidirectional override (Trojan Source) drops the sentence.
ANSI_ESCAPE = Lazy(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]?|\x9b[0-?]*[ -/]*[@-~]"
)
BIDI = Lazy("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
INVISIBLE = Lazy(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200d\u2060-\u2064\u206a-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff\ud800-\udfff\ufdd0-\ufdef"
    "\ufffe\uffff]")
# Other line breaks become \n before cleaning, so removing controls never joins lines.
OTHER_BREAKS = Lazy("\r\n?|\x85|\u2028|\u2029")

# Text telling the agent to override its instructions or send data away: dropped, any role.
INJECTION = Lazy(
    r"(?i)\b(?:(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:previous|prior|above|"
    r"earlier|all|your|system|existing)\b[^.\n]{0,20}\b(?:instructions?|prompts?|rules|"
    r"directions|guidelines|context|messages)\b|"
    r"(?:ignore|disregard|forget)\s+(?:all\s+)?(?:of\s+)?(?:the\s+)?(?:above|previous|prior|"
    r"preceding|earlier)\b|"
    r"you are now\b|new (?:system )?instructions\s*:|"
    r"system prompt\s*:|do not (?:tell|inform|alert) the user\b|"
    r"(?:send|post|upload|exfiltrate|forward|transmit|e-?mail|curl|leak)\b[^\n]{0,80}?"
    r"\b(?:to|at|into)\s+(?:https?|ftp)://)|"
    r"忽略(?:之前|以上|前面|上面|所有)|你现在是|无视(?:之前|以上|前面)")
# "From now on, you ..." re-addresses the agent: from a document, a tool or the agent
# itself it is an attempt to override; in the user's own turn it is the user's rule.
INJECTION_UNLESS_USER = Lazy(r"(?i)\b(?:from now on|going forward|henceforth),? you\b|从现在开始，?你")

# A bullet must not open what swallows the lines after it (a comment, a fence) nor make
# an agent load a file: Claude Code imports `@path` in CLAUDE.md outside code spans.
STRUCTURE = Lazy(r"<!--|-->|^(?:`{3,}|~{3,}|#{1,6}\s|-{3,}|\+{3,}|={3,}|<\w)")
AT_IMPORT = Lazy(r"(?:^|(?<=[\s(\[\"']))@[\w~./-]")
# What lint flags in an existing file: only imports that reach outside the repository.
OUTSIDE_IMPORT = Lazy(r"(?:^|(?<=[\s(\[\"']))@(?:~|/|\.\./)")
CODE_SPAN = Lazy(r"`+[^`]*`+")
# What one_line() escapes: every invisible and bidirectional character, and line breaks.
UNPRINTABLE = Lazy(f"{INVISIBLE.pattern}|{BIDI.pattern}|[\n\t\u2028\u2029]")
JSON_UNPRINTABLE = Lazy(f"{INVISIBLE.pattern}|{BIDI.pattern}|[\u2028\u2029]")

FENCE = Lazy(r"^\s{0,3}(`{3,}(?!.*`)|~{3,})")  # no backtick after a backtick fence's (CommonMark)


def fence_after(fence: str, line: str) -> tuple[str, bool]:
    """The fence open after `line` ("" for none), given the one before, and whether the
    line is fenced code (CommonMark: a close has its character, as long or more, alone)."""
    opened = FENCE.match(line)
    if not fence:
        return (opened.group(1), True) if opened else ("", False)
    closes = opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
        and not line[opened.end():].strip()
    return ("" if closes else fence), True
LIST_MARKER = Lazy(r"^(?:\s*(?:[-*+•]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?|\s*#{1,6}\s+|\s*>\s?)+")
EMPHASIS = Lazy(r"(?<!\*)\*\*(?!\*)")
CODE_OR_EMPHASIS = Lazy(r"(`+[^`\n]*`+)|" + EMPHASIS.pattern)  # a code span, within a line
# A sentence ends at `.!?` with closing quotes and a space, at `。！？`, or at `;` before a
# capital. One leading character class lets the engine jump between candidates.
SENTENCE_END = Lazy(r"[.!?。！？;；](?:(?<=[.!?])[.!?]*[\"'”’)\]]*\s+"
                    r"|(?<=[。！？])[。！？]*[\"”’」』)）]*\s*|(?<=[;；])\s+(?=[A-Z]))")
QUOTE_GOES_ON = Lazy(r"[.!?]+[\"'”’)\]]+\s")  # an end mark inside closing quotes or brackets

INSIDE_PARENS = 40  # characters after a full stop within which the parenthesis around it closes
PAREN_CLOSE = Lazy(r"(?<![:;])(?<!(?<!\S)\w)\)")  # not a smiley's, nor a list's "1)", "a)"

# Stats keys in --stats order (secret_KIND and uncovered_script_NAME follow, sorted).
STAT_KEYS = (
    "lines", "parsed", "malformed", "blank", "skipped_unparsed", "prose", "skipped_tool_output",
    "skipped_tool_call", "skipped_thinking", "skipped_meta", "skipped_injected", "skipped_role",
    "skipped_sidechain", "skipped_summary", "skipped_duplicate_event", "skipped_empty",
    "skipped_baseline", "messages", "sentences", "dropped_secret", "dropped_pii",
    "dropped_invisible", "dropped_injection", "dropped_structure", "dropped_no_signal", "signal",
    "dropped_noise", "dropped_length", "dropped_weak", "dropped_duplicate", "already_in_memory",
    "already_seen", "already_rejected", "dropped_over_cap", "proposed", "memory_requests",
    "requested", "cleaned_invisible", "rewritten_home_path", "skipped_files",
    "skipped_same_session", "uncovered_script", "cached_files")

FORMATS = ("native", "claude", "codex", "gemini", "copilot", "opencode", "messages", "cline",
           "aider", "specstory")


# -- the rules, compiled --------------------------------------------------------------

def rules_pattern(rules: Iterable[tuple[str, str]]) -> str:
    """One pattern of named groups, a group a rule (rule_name() reads the name back)."""
    names: dict[str, int] = {}
    parts = []
    for name, pattern in rules:
        names[name] = names.get(name, 0) + 1
        group = f"{re.sub(r'[^A-Za-z0-9]', '_', name)}__{names[name]}"
        parts.append(f"(?P<{group}>{pattern})")
    return "|".join(parts)


# Latin letters with a mark, and each typed without it: a frame's word matches both
# ("acuerdate"), from UNMARKED_LEAST letters: a shorter one collides ("là" is French "la").
UNMARKED = {c: base for c in map(chr, range(0xC0, 0x250))
            for base in [unicodedata.normalize("NFD", c)[0]] if base != c and base.isalpha()}
UNMARKED_LEAST = 5
# A pattern's pieces: an escape, a character class, a word, any other character.
PATTERN_PIECE = re.compile(r"\\.|\[(?:\\.|[^\]])*\]|[^\W\d_]+|.", re.S)


def unmarked(pattern: str, as_typed: bool = False) -> str:
    """A pattern whose words of UNMARKED_LEAST letters or more also match typed unmarked; or
    (`as_typed`, for a literal) the literal so typed."""
    def word(piece: str) -> str:
        if as_typed:
            return "".join(UNMARKED.get(c, c) for c in piece)
        return "".join(f"[{c}{UNMARKED[c]}]" if c in UNMARKED else c for c in piece)
    return "".join(word(piece) if len(piece) >= UNMARKED_LEAST and piece.isalpha() else piece
                   for piece in PATTERN_PIECE.findall(pattern))


# Verbs of recording that end a noun phrase as often ("every rule in the memory log"): they close
# no frame (frame_pattern).
NOUN_TOO = frozenset({"log", "pin", "register", "slot", "stash"})


WORD_HYPHEN = Lazy(r"(?<=[^\W\d_])-(?=[^\W\d_])")  # a hyphen joining two words' letters


def typed_forms(phrase: str) -> set[str]:
    """A literal phrase as typed: its apostrophe curly too, or in a phrase of words left out
    ("dont forget"; French has a "dont" of its own); a hyphen between letters a space or left
    out ("long term memory", "longterm"). The literals of a pre-filter (SIGNAL_PHRASES,
    REQUEST_WORDS) match as escape_phrase's pattern does."""
    quoted = {phrase.replace("'", typed) for typed in ("'", "’", "" if " " in phrase else "'")}
    return {WORD_HYPHEN.sub(joined, form) for form in quoted for joined in ("-", " ", "")}


def escape_phrase(phrase: str) -> str:
    """A literal phrase as a pattern that matches its typed_forms."""
    escaped = re.escape(phrase).replace("'", "['’]?" if " " in phrase else "['’]")
    return WORD_HYPHEN.sub(lambda _: "[- ]?", escaped.replace("\\-", "-"))


def stressed(verb: str) -> str:
    """A Spanish verb as a pronoun after it leaves it, its stress marked ("anota": "anótalo")."""
    vowels = [at for at, c in enumerate(verb) if c in "aeiou"]
    at = vowels[-2] if len(vowels) > 1 else -1
    return verb[:at] + "áéíóú"["aeiou".index(verb[at])] + verb[at + 1:] if at >= 0 else verb


def frame_pattern(phrases: str, closes: bool = False, extra: str = "") -> str:
    """A frame's own word, opening its part after courtesy or (`closes`) closing it, but for a
    noun as often (NOUN_TOO): "The browser will remember that setting" holds none, "the memory
    log" no verb. In a script without spaces it may stand anywhere; `extra` is a pattern beside
    the phrases (a wish: "I'd like it remembered"). A Romance verb may take its object as a
    suffix (ENCLITIC: "salvalo", "anótalo")."""
    words = [p for p in phrases.split("|") if not CLOSE_SCRIPT.match(p)]
    spaced = "|".join(map(escape_phrase, words))
    marked = "|".join(sorted({stressed(p) for p in words if re.fullmatch("[a-zñ]+[ae]", p)}))
    suffixed = rf"(?:{spaced})(?:{ENCLITIC})?|(?:{marked})(?:{ENCLITIC})"
    verbs = "|".join(escape_phrase(p) for p in words if p not in NOUN_TOO)
    close = [re.escape(p) for p in phrases.split("|") if CLOSE_SCRIPT.match(p)]
    last = rf"|(?<!\w)(?:{verbs})$" if closes else ""
    return unmarked(rf"^(?:{_LEAD_WORDS}[,，]?\s+|(?:{_CAN_YOU})\s+"
                    rf"|¿?(?:{_MODALS})\s+|{_SURE}\s+|{_WISH} you to\s+)*"
                    rf"(?:{suffixed}{extra})(?![\w(-])(?!\s+sure\b)"  # "make sure you" asks (_SURE)
                    + last + "".join("|" + word for word in close))


def phrase_pattern(phrases: str) -> str:
    """Literal phrases as one alternation, whole words in a script that spaces them (`füg` is
    not in `hinzugefügt`); in one without spaces (Chinese) anywhere. The word edges stand once
    around all the spaced phrases, not around each: the engine then tries them only where a
    word starts, and it finds the same."""
    words = [escape_phrase(p) for p in phrases.split("|") if not CLOSE_SCRIPT.match(p)]
    close = [re.escape(p) for p in phrases.split("|") if CLOSE_SCRIPT.match(p)]
    return unmarked("|".join(([rf"(?<!\w)(?:{'|'.join(words)})(?!\w)"] if words else []) + close))


def rule_name(match: re.Match[str]) -> str:
    group = match.lastgroup or ""
    return group.rsplit("__", 1)[0].replace("_", "-")


# SIGNAL, NOISE and SCORE are matched against the lower-cased sentence, faster than re.I.
SIGNAL = Lazy(rules_pattern((name, phrase_pattern(phrases)) for name, phrases in SIGNAL_RULES))
# A sentence can match SIGNAL only where one of these occurs (see signal_phrases).
SIGNAL_PHRASES = tuple(sorted({typed for _, phrases in SIGNAL_RULES for p in phrases.split("|")
                               for typed in typed_forms(p)}))
ASCII_PHRASES = tuple(p for p in SIGNAL_PHRASES if p.isascii())  # all an ASCII message can hold
SCORE = tuple((name, who, Lazy(pattern), points) for name, who, pattern, points in SCORE_RULES)
NOISE = Lazy(rules_pattern(NOISE_RULES))
REQUESTED_NOISE = Lazy(rules_pattern(rule for rule in NOISE_RULES if rule[0] not in REQUEST_STANDS))
REQUESTS = tuple((name, Lazy(pattern, re.I)) for name, pattern in REQUEST_RULES)
# Requests where a topic may stand for the content ("add guidance on tests to CLAUDE.md").
TOPICAL = {"memory-file", "update-memory-file", "memory-file-zh", "update-memory-file-zh"}
MEMORY_RULES = TOPICAL | {"remember-that", "remember-zh"}  # naming a memory or remembering
REMEMBER_SLIPS = "|".join(slips("remember"))
# "Merk dir", not "Users won't remember".
REMEMBER = Lazy(frame_pattern(REMEMBER_PHRASES + "|" + REMEMBER_SLIPS,
                              extra="|" + _WISHED + "|" + _NOTE_TAKEN))
# A label for later sessions, alone or after a rule's noun or a verb of recording what was said:
# "For next time: X", "Write this down for later sessions: X" (not "Update the docs for next
# time: X", a thing of its own).
FUTURE_LABEL = Lazy(unmarked(r"(?:" + _LEAD_WORDS) + r"[,，]?\s+)*(?:(?:(?:rule|rules|notes) |"
                    r"(?:" + phrase_pattern(RECORD_PHRASES) + r")(?:\s+(?:this|that|it|aí))?"
                    r"(?:\s+down)?\s+)?"
                    r"(?:" + phrase_pattern(FUTURE_PHRASES + "|" + FUTURE_LABELS) + "|"
                    + _LATER_SESSIONS + ")|"
                    + RULE_LABEL + ")")
# A phrase for later sessions opening the sentence ("going forward with X" only moves on).
FUTURE_OPENS = Lazy(unmarked(r"^(?:" + _LEAD_WORDS) + r"[,，]?\s+)*(?:" +
                    phrase_pattern(FUTURE_PHRASES) + "|" + _LATER_SESSIONS +
                    r")(?! (?:to|with)\b)[,，:：]?\s*(?P<content>.+)$")
RECORD = Lazy(frame_pattern(RECORD_PHRASES, closes=True))
RECORDED = Lazy(phrase_pattern(RECORD_PHRASES))  # ... anywhere in the frame ("things to add")
LINE_NOUN = Lazy(phrase_pattern(LINE_NOUNS))
# "Remember that going forward": a phrase for later sessions alone points back.
FUTURE_ALONE = Lazy(phrase_pattern(FUTURE_PHRASES + "|" + FUTURE_LABELS + "|next time") + "|"
                    + _LATER_SESSIONS)
MEMORY_NAMED = Lazy(_NAMED_FILE + "|" + phrase_pattern(MEMORY_SAID))
RULE_ADDED = Lazy(r"\ban? (?:" + _STANDING + r" )*(?:" + RULE_KINDS + ")$")
PARENTHESIS = Lazy(r"\s[(（]([^()（）]*\s[^()（）]*)[)）]")  # of words; the text's length kept
LEADS_ONLY = Lazy(r"(?i)(?:" + _LEAD_WORDS + r"[\s,，.!—–-]*)+")  # "Au fait, add it to CLAUDE.md"
# ... or what is recorded named as a memory's line ("save this preference: X").
# ... or "a rule", "a note": what a memory holds, not a thing kept in RAM.
LINE_NAMED = Lazy(r"(?i)(?:an?|the|this|that|one)\s+(?:\w+\s+)?"
                  r"(?:rule|note|line|convention|entry|reminder|bullet)s?")
# ... or what follows named a thing to remember ("Important thing to remember: X").
TO_REMEMBER = Lazy(unmarked(r"(?:" + _LEAD_WORDS) + r"[,，]?\s+)*(?:(?:[\w'-]+\s+){0,3}?"
                   r"(?:thing|things|something|point|points|lesson|lessons|fact|facts|one|gotcha|"
                   r"gotchas|tip|tips|trick|note)\s+)?"
                   r"(?:to (?:remember|keep in mind)"
                   r"|worth (?:remembering|saving|recording|keeping))"
                   r"(?:\s+(?:for|in|across|going)\b.*)?")
KIND_NAMED = Lazy(r"(?:\b(?:this|these|that|it|the following|my|our|esto|eso|esta|ceci|cela|ça|"
                  r"das|dies|"
                  r"isso|isto|questo|это|dit|dat|bunu)\s+|^\w+\s+(?=as\s))"
                  r"(?:(?:as|como|comme|als|come|jako)\s+(?:(?:an?|une?|una?|eine?)\s+)?)?"
                  r"(?:\w+\s+)?(?:" + RULE_KINDS + ")$")
NAMED_PLACE = Lazy(_NAMED_FILE + "|" + phrase_pattern(PROJECT_RULES))  # a file or the rules, named
MEMORY_OR_BARE = Lazy(_NAMED_FILE + "|" + phrase_pattern(MEMORY_SAID + "|" + MEMORY_BARE))
# A rule said before the verb that closes a request, in a language that puts its verb last
# (Japanese, Korean, Turkish): a quotative ties the rule to the verb ("CLAUDE.mdに X と追記して",
# "X다고 CLAUDE.md에 적어 줘", "X diye ekle", "X şeklinde"), or a quotation's end, a nominaliser
# ("Xことを", "X는 걸", "Xという ルールを") or a pointer after a pause ("X、これを", "X — 이거"); the
# memory named before the rule or between it and the verb, a verb of remembering needs none ("X
# ことを覚えておいて"); a clause after a comma may give the reason. Not a verb denied or done
# (VERB_LAST_NOT: "書かないで", "적지 마", "ekleme", "追記しました", "書いた"; Korean's past, its
# final ㅆ: "적어 뒀어").
LAST_VERBS = ("追記|追加|書き足し|書き込|書き留め|書き残し|書|記録|記載|保存|メモ(?!リ)|加え|足し|覚え|記憶|登録|残し|入れ|更新|"  # not メモリ
              "추가|적어|저장|기록|메모(?!리)|기억|넣어|써|남겨|등록|업데이트|"
              "ekle|yaz|kaydet|not düş|not al|not e[dt]|hatırla")
# ... asked as a question, its ending asks for it ("書いといてくれる？", "써 줄래?", "yazar mısın?").
ASKED_LAST = Lazy(r"くれ|もら[えっ]|いただけ|くださ|下さ|주|줘|줄래|m[ıi]s[ıi]n|ebilir|abilir")
PAST_NOT = frozenset("겠있")  # Korean's final ㅆ is its past but in these ("주시겠어요", "있나요")
REMEMBERING_LAST = frozenset({"覚え", "記憶", "기억", "hatırla", "メモ", "메모"})  # note it: remember
MEMORY_WORDS_LAST = "メモリー|メモリ|記憶|ルール|規則|メモ|ノート|notes|메모리|기억|규칙|룰|메모|노트"
_RULE_NOUN = r"(?:ルール|規則|규칙|(?:bir\s+)?(?:kural|not)\w*)"  # "X というルールを": the rule is X
_POINTER_LAST = r"(?:これ|それ|이거|이걸|이것|그거|bunu)(?:を|は|를|을|도)?"
_QUOTATIVE = (r"(?:(?:って|と)いう(?:の|こと|" + _RULE_NOUN + r")?を?|こと(?:を|って|は|[、,，])|って|と"
              r"|(?<=[다라자])고|라고|(?:는|은|한|라는)\s?(?:거|걸|것을|것)|(?:다는|라는)\s?규칙을?"
              r"|(?<=[」』\"”'’])\s*(?:を|は|고|라고|이라고|를|을)?|[、,，]\s*を"
              r"|\s+(?:diye|şeklinde)|\s*(?:[—–]|[、,，])\s*" + _POINTER_LAST + r")"
              r"(?:\s*" + _RULE_NOUN + r"(?:を|을|를)?)?")
_PLACE_NAMED = "(?:" + "|".join((_NAMED_FILE, phrase_pattern(MEMORY_SAID),  # ... or its file
                                  f"(?:{MEMORY_WORDS_LAST})(?:\\s?파일|ファイル)?")) + ")"
_PLACE_LAST = (r"(?:(?:[^\s、,，。]{1,10}\s?)??" + _PLACE_NAMED
               + r"\s?(?:にも|には|に|へ|として|에다가|에다|에도|에|으로|로)"
               r"|(?:" + _NAMED_FILE + r"(?:['’]y?[ae]|\s+dosyas[ıi]na)"
               r"|(?:hafıza|kural)\w*(?:\s+dosyas\w*)?[nry][ae])(?!\w))")
PLACE_LAST = Lazy(_PLACE_LAST, re.I)
NAMED_LAST = Lazy(_PLACE_NAMED + r"|hafıza|kural", re.I)
# A verb's ending: kana, hangul or Turkish letters and the few kanji of asking ("して下さい", "助か
# ります", "お願い"), no other word ("保存してからディスクに書き出して" goes on to another deed).
_ENDING_CHARS = r"\u3041-\u309f\u30fc\u3131-\u318e\uac00-\ud7a3a-zA-ZçğıöşüÇĞİÖŞÜ~下助願頂欲"  # ㅎㅎ too
_ENDING = "[" + _ENDING_CHARS + " ]"  # with spaces ("해 주세요"); without, where a space opens the rule
_VERB_ENDED = r"(?P<verb>" + LAST_VERBS + r")(?P<ending>" + _ENDING + r"{0,16})"
_FOR_LATER = r"[^、,，。!?！？]{1,16}(?:ために|のため|위해서?|위하여)"  # "今後のために、メモリに残して"
_MARKS = "[。.!?！？~～〜]*"  # a sentence's end after a closing verb ("残しといて～")
_VERB_CLOSE = r"(?:(?:좀|ちょっと|bir)\s*)?" + _VERB_ENDED + r"(?:[、,，][^。.!?！？\n]*)?" + _MARKS + r"\s*$"
VERB_LAST = Lazy(r"(?P<quote>" + _QUOTATIVE + r")[、,，]?\s*"
                 r"(?:(?P<place>" + _PLACE_LAST + r")[、,，]?\s*)?"
                 + _VERB_CLOSE, re.I)
# ... or the place and the verb alone, a pointer or a purpose (_FOR_LATER) before them, at what
# was said ("メモリに残しておいて", "Bunu proje hafızasına yaz").
VERB_ALONE = Lazy(r"^\s*(?:" + _FOR_LATER + r"[、,，]?\s*)?(?:" + _POINTER_LAST + r"[、,，]?\s*)?"
                  r"(?P<place>" + _PLACE_LAST + r")[、,，]?\s*"
                  + _VERB_ENDED + _MARKS + r"\s*$", re.I)  # (no clause after it: a rule)
VERB_LAST_NOT = Lazy(r"ない|なく|지\s?마|^m[ae]|ました|(?<!い)た|いた(?!だ)|[dt][ıi]m|[dt][ıi]k|yor"
                     r"|^(?:돼|된|되|され)")  # ... nor a passive: "저장돼 있는지", "保存されている"
# ... nor one the speaker does, or says needs no doing or is done already ("제가 기억하고 있을
# 테니 안 적어도 돼요", "zaten yazılı, eklemene gerek yok", "私が覚えておく").
OWN_OR_NO_NEED = Lazy(r"제가|내가|私が|僕が|俺が|\bben\b|必要(?:は)?ない|いらない|なくていい|(?<!\S)안\s|"
                      r"않아도|필요\s?없|gerek yok|gerekmez|\bzaten\b|(?<!\S)이미\s|すでに|もう書", re.I)
# ... or the verb closing a frame that opens the sentence, the rule after a colon, a comma or a
# space ("ルールに登録して：X", "메모리에 저장해줘 X", "kurallara ekler misin, X"), after a colon
# alone where no memory is named ("hatırla: X"); not a thing kept (an object before the verb:
# "結果をメモリに保存して、..." keeps it in RAM), nor this task's ("이번 작업에서만 기억해: X").
VERB_FIRST = Lazy(r"^(?P<frame>[^:：。!?！？\n]{0,40}?(?P<verb>" + LAST_VERBS + r"))"
                  r"(?:(?P<ending>" + _ENDING + r"{0,16}?)\s*[:：、,，]\s*"
                  r"|(?P<tight>[" + _ENDING_CHARS + r"]{0,16})[\s　]+)"
                  r"(?P<content>\S.*)$", re.I)
POINTER_OPENS = Lazy(r"\s*" + _POINTER_LAST + r"(?<=[を를을걸])")
THING_KEPT = Lazy(r"(?<!これ)(?<!それ)(?<!이거)(?<!이걸)(?<!그거)(?:を|를|을)")
VERB_LAST_SCRIPT = Lazy(CLOSE_SCRIPT.pattern + r"|[çğıöşüÇĞİÖŞÜ]|\bdiye\b|'y?[ae]\b")  # Turkish too
QUOTED_LAST = Lazy(r"[「『\"“']([^「」『』\"“”']{4,})[」』\"”']\s*$")  # a rule quoted right before
MODAL_OPENS = Lazy(unmarked(r"^¿?(?:" + _MODALS + r")\s"))
LAST_CLAUSE = Lazy(r"[,，;；]\s*|\s+so\s+")
ANY_OF_IT = Lazy(r"(?:any|all|none|some) of (?:this|that|it|these|those)"
                 r"|any ?thing(?: of (?:this|that))?")
REFUSAL = Lazy(r"(?i)(?:please\s+)?(?:don't|do not|no need to|never)\s+|(?:请)?(?:不要|别|不用|不必|无需)把?")
# A verb whose object is what was said or a memory's line ("drop a line in .cursorrules saying X").
POINTED = Lazy(unmarked(r"^(?:(?:" + _LEAD_WORDS) + "|" + _CAN_YOU + r")[,，]?\s+)*"
               r"[^\W\d_]+\s+(?:this|it|that|these|an? (?:\w+ )?(?:line|note|bullet|entry))\b")
# What was said, weighed as worth a place in a memory named ("gotcha worth recording in AGENTS.md").
WORTH = Lazy(r"\bworth (?:adding|recording|noting|saving|keeping|writing down|remembering|putting|"
             r"an? (?:line|note|entry|bullet|rule|mention))\b")
# A memory ending a frame as the place the rule goes ("add these to CLAUDE.md"; not "to the
# CLAUDE.md generator script", "update the CLAUDE.md file", "make the CLAUDE.md loader ...").
INTO_MEMORY = Lazy(r"\b(to|in|into|inside|for)\s+" + _SECTION_OF + r"(?:the\s+)?[`\"']?(?:"
                   + _NAMED_FILE + "|"
                   + phrase_pattern(MEMORY_SAID) + r")[`\"']?(?:\s+file)?$")

# A memory file by its file name as the place a rule goes, after a word of direction in the
# languages of REQUEST FRAMES ("Занотуй у AGENTS.md, що X", "new rule for .cursorrules: X"),
# framing with a word for a memory's line (LINE_NOUNS) or a verb of recording opening a clause.
_PLACE_WORDS = (r"(?:to|into|in|inside|on|onto|for|dans|à|au|pour|zu|zur|ins|im|für|a|al|en|para|"
                r"no|na|em|per|nel|nella|alla|alle|allo|в|во|у|до|для|dla|do|vào|vao|naar|aan|"
                r"voor|için|ke|di|till|i|w|we|στο|στα|στη|στην|σε|în|في|به|में)\s+"
                r"(?:(?:the|la|le|les|die|der|den|das|el|o|il|lo|de|het|de la)\s+)?")
FILE_AS_PLACE = Lazy(r"(?<!\S)" + _PLACE_WORDS + r"[`\"']?" + _NAMED_FILE)
# ... or any memory named (MEMORY_SAID) after such a word: where a verb of recording puts a rule.
MEMORY_PLACE = Lazy(r"(?<!\S)" + _PLACE_WORDS + r"[`\"']?(?P<name>" + _NAMED_FILE + "|"
                    + phrase_pattern(MEMORY_SAID) + r")[`\"']?(?:\s+file)?"
                    r"(?:" + _PLACE_ENDS + r"|(?=\s+(?:" + _FOR_GOOD + r"|like)\b))")
PLACE_WORD = Lazy(r"\s" + _PLACE_WORDS + r"$")  # refused(): "that in [the] CLAUDE.md"
PURPOSE_WORDS = frozenset({"for", "pour", "für", "para", "per", "voor", "dla", "для", "için"})
THING_DOES = Lazy(r"\w\s+(?:that|which)\s+\w+")  # placed(): a relative clause about a thing
# ... and the words between a verb of recording and a bare memory: a pointer, then a place's.
BARE_PLACE = Lazy(r"(?:down\s+)?"  # "jot down in memory"
                  r"(?:(?:this|that|it|these|those|das|dies|ça|eso|esto|isso|isto|это|questo)\s+)?"
                  r"(?:(?:si|sich|se|собі|себе|aí|ahí)\s+)?"  # "zapiš si do paměti", "anota aí"
                  r"(?:" + _PLACE_WORDS + r")?")
# ... or the memory's name alone ending the frame, in any language ("Adiciona no CLAUDE.md:").
ENDS_IN_MEMORY = Lazy(r"(?:" + _NAMED_FILE + "|" + phrase_pattern(MEMORY_SAID)
                      + r")[`\"'’]?(?:\s+file)?$")
FRAME_STRONG = Lazy(REQUEST_SEPARATOR)
# A dash between clauses before a frame ("Also — unrelated — put in memory that X"), or "and"
# before a colon's ("I'll say it once and I'd like it remembered: X"; framed_request).
DASHED = Lazy(r"\s[—–-]\s")
JOINED = Lazy(r"\s[—–-]\s|,?\s(?:and|but)\s")
COLON_REST = Lazy(r"[:：]\s+(.+)$")  # what follows a pointer's colon (memory_request)
COLON_WORDS = 3  # words of a rule after a pointer's colon, at least (not "Put it in CLAUDE.md: ok")
OWN_ACT = Lazy(r"\b(?:let me|let's|let us|i'll|i will|i'm|i am|we'll|we will|we're|i've|we've)\b")
# A memory named as the label before a colon, with lead words ("memory file:"; a file's name
# alone is a status line's: "CLAUDE.md: updated"), or "needs this" after a file's name too.
PLACE_LABEL = Lazy(unmarked(r"(?:(?:" + _LEAD_WORDS) + r")[,，]?\s+)*(?:"
                   + phrase_pattern(MEMORY_SAID) + r"|(?:" + phrase_pattern(MEMORY_SAID) + "|"
                   + _NAMED_FILE + r")\s+(?:needs|gets|should get)\s+(?:this|that|it))")
# An edit of a part of a memory file ("update the sample code in AGENTS.md that uses X"), the
# verb opening the request: the "that" after it names the part when a verb or an adverb follows
# it with no subject before (RELATIVE_OPENS), and the request states no rule of its own.
EDITED_PART = Lazy(_LEAD + _ASK + r"(?:also )?(?:update|edit|fix|change|correct|revise|rewrite)\s+"
                   r"(?!(?:in|into|inside|to|on)\s)(?:[^\s,;]+\s+){1,5}(?:in|of|inside)\s+"
                   r"(?:the\s+)?[`\"']?" + _NAMED_FILE + r"[`\"']?$")
RELATIVE_OPENS = Lazy(r"(?:still|now|currently|also|already|only|just|is|are|was|were|has|had)\b"
                      r"|[a-z]+(?:s|ed)\b(?! (?:must|should|shall|can|could|will|would|may|might|"
                      r"is|are|was|were|has|have|had|do|does|did|need|needs)\b)")
FRAME_DENIED = Lazy(unmarked(REQUEST_DENIED))
PURPOSE = Lazy(r"[,，]?\s*(?<!\w)" + _PURPOSE + r".*$")
MOMENT = Lazy(REQUEST_MOMENT)
THIS_TASK = Lazy(_THIS_TASK)
OTHER_PLACE = Lazy(_OTHER_PLACE)
FOR_GOOD = Lazy(r"\b" + _FOR_GOOD + r"\b")
# What was said, kept for a purpose that names the memory ("save that so you don't forget").
FORGETTING = Lazy(r"\b(?:this|that|it)(?: down)?(?: (?:to|in|into|on) (?:the |your |our )?"
                  r"(?:notes?|memory|memories|rules|instructions)| somewhere)?"
                  r" so (?:that )?(?:you|we)(?:'ll)? "
                  r"(?:(?:don't|do not|won't|never|stop) forget(?:ting)?|remember)\b")
NEGATED = Lazy(REQUEST_NEGATION, re.I)
COURTESY = Lazy(REQUEST_COURTESY, re.I)
# A message can hold a request only where one of these words occurs (see judge_message), as
# written or typed unmarked (see unmarked).
_REQUEST_WORDS = (*_MEMORY_SPELLED, "memor", "rule", "convention", "remember", "from now on",
                  "going forward", "moving forward", "from here on", "henceforth",
                  "记", "写进", "写入", "写到", "加到", "加入", "添加到",
                  "放到", "放进", "更新到", "补充到", "以后", "今后", "从现在开始", "从今",
                  "往后", "规则", "記", *MEMORY_WORDS_LAST.split("|"), *REMEMBER_PHRASES.split("|"),
                  *FUTURE_PHRASES.split("|"),
                  *MEMORY_SAID.split("|"), *FUTURE_LABELS.split("|"),
                  *REMEMBER_SLIPS.split("|"), *NEW_RULE_ABROAD.split("|"),
                  *PROJECT_RULES.split("|"), *MEMORY_BARE.split("|"),
                  *RULE_KINDS.split("|"), "instruction", "codify", "future session", "next session",
                  "every session", "note",  # _NOTE_TAKEN
                  "later session", "upcoming session", "subsequent session", "coming session",
                  "next sessions", "future chat", "future conversation", "later chat",
                  "future you", "future me", "future agent", "next agent")
REQUEST_WORDS = frozenset(typed for w in _REQUEST_WORDS for typed in typed_forms(w)) \
    | {unmarked(w, as_typed=True) for w in _REQUEST_WORDS}
SECRET_KINDS_OF: dict[str, set[int]] = {}  # pre-filter literal -> the rules it admits
for _index, (_, _hint, _, _) in enumerate(SECRET_RULES):
    for _literal in _hint.split("|"):
        SECRET_KINDS_OF.setdefault(_literal, set()).add(_index)


# SECRET_RULES' patterns as written and, `[1]`, for lower-cased text (no (?i) flag).
SECRET_PATTERNS = tuple((Lazy(pattern, re.S), Lazy(pattern.removeprefix("(?i)"), re.S))
                        for _, _, pattern, _ in SECRET_RULES)
# Every pre-filter literal as one trie (see secret_hints); SIGNAL phrases are faster with `in`.
SECRET_HINT = Lazy(literal_trie(SECRET_KINDS_OF))


# == Records ===========================================================================

class UserError(Exception):
    """An input or usage problem: printed as one line, exit 2."""

    def __init__(self, path: str, reason: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}" if path else reason)

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return UserError, ("", str(self))  # raised in a worker process, printed by main


class Message(NamedTuple):
    """Visible prose of one turn, as a reader found it."""
    role: str
    text: str
    line: int
    timestamp: str | None
    # Its conversation, where the format names one (checkpoint copies share it); "" means the file.
    conversation: str = ""
    # False for a role --roles leaves out (assistant): kept only for a request pointing back at it.
    judged: bool = True


class MemoryWrite(NamedTuple):
    """An agent's own edit of a memory file (Edit, MultiEdit, Write): what it added, unreviewed."""
    line: int
    target: str  # the file's name: CLAUDE.md, AGENTS.md, ...
    added: tuple[str, ...]


class Candidate(NamedTuple):
    """A sentence on its way to the patch; weak ones too, as other transcripts may lift them."""
    text: str
    key: str
    role: str
    file: str
    line: int
    timestamp: str | None
    kind: str
    score: int
    order: tuple[int, int, int, int]  # input, line, message, sentence: transcript order
    conversation: str = ""  # see Message; the file's path when the format names none
    request: str = ""  # "FILE:LINE" of the memory request that asked for it, or ""
    said_in: int = 1  # conversations that said this finding (set across transcripts)
    source: str = ""  # an agent's memory note: "claude-auto-memory" or "codex-memory"
    also: str = ""  # the other source of a finding said by a note and a transcript


class Options(NamedTuple):
    fmt: str | None = None
    roles: frozenset[str] = frozenset({"user", "assistant"})
    include_sidechains: bool = False
    include_summaries: bool = False
    allow_pii: bool = False
    extra_signal: tuple[str, ...] = ()
    extra_noise: tuple[str, ...] = ()
    explain: bool = False
    min_score: int = MIN_SCORE
    # The counters are printed (--stats, --json): without them idle messages are not split to count.
    count_all: bool = True
    # The baseline (conversation key -> last record reviewed); None: no key is needed.
    baseline: dict[str, int] | None = None
    include_user_notes: bool = False  # auto-memory notes of type `user` (about the person)
    # The repository's root (or this folder), of file keys and OpenCode sessions.
    root: str = "."


# == Reading: records in, visible prose out. A reader maps one record to (outcome, messages),
# the outcome being its counter ("prose" or a skipped_* reason): each record counts once.

_DECODER = json.JSONDecoder()
Outcome = tuple[str, list[Message]]


def parse_jsonl_line(raw: bytes) -> list[Any] | None:
    """A JSONL line's records (glued ones each), or None when it is not JSON (half-written)."""
    try:  # in UTF-8, decoded as json.loads decodes bytes without sniffing
        text = raw.decode("utf-8", "surrogatepass")
        records, pos = [], 0
        while (pos := json.decoder.WHITESPACE.match(text, pos).end()) < len(text):
            obj, pos = _DECODER.raw_decode(text, pos)
            records.append(obj)
        return records
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        pass
    try:  # json.loads tells UTF-16 and UTF-32, and a BOM, from the bytes
        return [json.loads(raw)]
    except (ValueError, RecursionError):
        return None


class Position:
    """Conversation key, records a baseline reviewed (`skip`), last complete one (`through`)."""

    key: str | None = None
    skip = 0
    through = 0


def read_jsonl(lines: Iterable[bytes], reader: Any, stats: Counter[str], pos: Position,
               may_hold_prose: Any = None) -> Iterator[Message]:
    """Drive a reader over JSONL lines; one ruled out or reviewed is counted, not parsed."""
    number = blank = unparsed = malformed = 0  # plain ints: this loop runs once a line
    raw = b"\n"
    lines = iter(lines)
    skipped = sum(1 for _ in itertools.islice(lines, pos.skip))
    for number, raw in enumerate(lines, skipped + 1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if raw[:1] in BLANK_START and not raw.strip():  # strip() copies: only when it may be blank
            blank += 1
        elif may_hold_prose and not may_hold_prose(raw):
            unparsed += 1
        else:
            records = parse_jsonl_line(raw)
            if records is None:
                malformed += 1
                continue
            outcomes = []
            for record in records:
                outcome, messages = reader(record, number)
                outcomes.append(outcome)
                yield from messages
            # One line, one counter: prose wins over the skip reason of a glued partner.
            stats["prose" if "prose" in outcomes else outcomes[0]] += 1
    number = max(number, skipped)
    stats.update(lines=number, blank=blank, skipped_unparsed=unparsed, malformed=malformed,
                 skipped_baseline=skipped, parsed=number - blank - unparsed - malformed - skipped)
    # A half-written last line is read again once complete.
    pos.through = number - (not raw.endswith(b"\n") and parse_jsonl_line(raw) is None)


BLANK_START = frozenset((b"", b" ", b"\t", b"\r", b"\n", b"\x0b", b"\x0c"))  # how a blank line starts


def read_document(messages: Any, reader: Any, stats: Counter[str],
                  pos: Position) -> Iterator[Message]:
    records = messages if isinstance(messages, list) else []
    pos.through = len(records)
    stats.update(lines=pos.through, parsed=pos.through, skipped_baseline=min(pos.skip, pos.through))
    for index, record in enumerate(records[pos.skip:], pos.skip + 1):
        outcome, found = reader(record, index)
        stats[outcome] += 1
        yield from found


def strip_injected(text: str) -> str:
    """Remove tag-wrapped injected context; "" when the whole text is boilerplate."""
    text = (INJECTED_SPAN.sub("", text) if "<" in text else text).strip()
    return "" if text.startswith(INJECTED_PREFIXES) else text


def skip_reasons(**kinds: str) -> dict[str, str]:
    """{kind: counter} from each skip counter's kinds, spaced."""
    return {kind: reason for reason, names in kinds.items() for kind in names.split()}


SKIP_FOR_BLOCK = skip_reasons(
    skipped_tool_output="tool_result function_call_output web_search_tool_result functionResponse",
    skipped_tool_call="tool_use server_tool_use function_call functionCall",
    skipped_thinking="thinking redacted_thinking reasoning thought")
GEMINI_PART_KINDS = ("functionCall", "functionResponse")


def content_texts(content: Any, clean: Any = None) -> tuple[str, list[str]]:
    """(outcome, visible texts) of a string or of OpenAI, Anthropic or Gemini parts."""
    parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    texts: list[str] = []
    reason = ""
    for part in parts:
        if isinstance(part, dict):
            # Gemini parts name their kind by key: {"functionCall": ...}.
            kind = _str(part.get("type")) or next((k for k in GEMINI_PART_KINDS if k in part), "text")
            if part.get("thought"):
                kind = "thought"
            if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
                part = part["text"]
            else:
                reason = reason or SKIP_FOR_BLOCK.get(kind, "skipped_meta")
                continue
        if not isinstance(part, str):
            continue
        visible = strip_injected(clean(part) if clean else part)
        if visible:
            texts.append(visible)
        elif part.strip():
            reason = reason or "skipped_injected"
    return ("prose" if texts else reason or "skipped_empty"), texts


def _str(value: Any) -> str:
    """A JSON field that should be a string, or "" (a list or object never matches)."""
    return value if isinstance(value, str) else ""


def _messages(role: str, texts: list[str], line: int, stamp: Any, conversation: str = "",
              judged: bool = True) -> list[Message]:
    when = _timestamp(stamp)
    return [Message(role, text, line, when, conversation, judged) for text in texts]


def read_turn(opts: Options, role: str, content: Any, line: int, stamp: Any, conversation: str = "",
              clean: Any = None, calls: Any = None) -> Outcome:
    """A turn's visible texts as messages (only `calls`: skipped_tool_call); see judged."""
    if role in opts.roles:
        outcome, texts = content_texts(content, clean)
        outcome = "skipped_tool_call" if outcome == "skipped_empty" and calls else outcome
        return outcome, _messages(role, texts, line, stamp, conversation)
    if role != "assistant":
        return "skipped_role", []
    _, texts = content_texts(content)
    return "skipped_role", _messages(role, texts, line, stamp, conversation, judged=False)


def native_reader(opts: Options) -> Any:
    """The core format: {"role": ..., "text": ...} per line."""
    def read(record: Any, line: int) -> Outcome:
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            return "skipped_meta", []
        role = _str(record.get("role"))
        return read_turn(opts, role, record["text"], line, record.get("timestamp"))
    return read


def claude_may_hold_prose(raw: bytes) -> bool:
    """False only for a Claude Code line that cannot hold prose (decoding is the cost); quotes in
    strings are escaped, so the patterns match keys and values only. Not prose: text blocks of the
    Read tool's copy or a tool result; content beside a tool result, unless a record is glued on."""
    key_end = raw.find(b'":') + 2  # after the first key: `": ` in a re-serialized copy
    spaced = raw[key_end:key_end + 1] == b" "
    types, content, tool_result, tool_copy = CLAUDE_MARKERS[spaced]
    speakers = 0  # user and assistant types: records, or messages nested in one
    progress = False
    nested = -1  # where the last text block inside a tool result's content list ends
    for match in types.finditer(raw):  # one pass over the line for every type it needs
        kind = match.group(1)
        if kind == b"text":
            at = match.start()
            if nested >= 0 and next_text_block(raw, nested, at, spaced) or opens_tool_texts(raw, at):
                nested = match.end()
            elif not raw.endswith(tool_copy, 0, at):
                return True
        elif kind is None:  # an edit tool's call: read when it names a memory file (MemoryWrite)
            path = EDIT_PATH.match(raw, match.end()) if raw.count(b'"file_path"') == 1 else None
            if MEMORY_FILE_BYTES.search(raw, *(path.span() if path else (0, len(raw)))):
                return True
        elif kind == b"progress":
            progress = True
        else:
            speakers += 1
    if content not in raw:
        return False
    if progress:
        return bool(GLUE_POINT.search(raw))
    return speakers > 1 or nested < 0 and tool_result not in raw


# The patterns compact, as Claude Code writes, and with a re-serialized copy's `": "`.
CLAUDE_MARKERS = {
    spaced: (Lazy(re.escape(b'"type' + sep) + rb'(?:(text|user|assistant|progress)"|tool_use",'
                  rb'\s*"id":\s*"[^"]*",\s*"name":\s*"(?:Edit|MultiEdit|Write)")'),
             b'"content' + sep,
             b'"type%stool_result"' % sep, b'"toolUseResult": {' if spaced else b'"toolUseResult":{')
    for spaced, sep in ((False, b'":"'), (True, b'": "'))}
# Between two text blocks of a tool result's content list: the first one's text, `},{`.
NEXT_TEXT = Lazy(rb',\s?"text":\s?"[^"\\]*(?:\\.[^"\\]*)*"\},\s?\{')
TOOL_TEXTS = Lazy(rb'\{"tool_use_id":\s?"[^"\\]*",\s?"type":\s?"tool_result",\s?"content":\s?\[\{')
# How TOOL_TEXTS ends, and how far back its `tool_result` starts at most.
CONTENT_LIST = (b'"content":[{', *(b'"content":%c[{' % space for space in b" \t\n\r\x0b\x0c"))
TOOL_RESULT_REACH = len(b'tool_result", "content": [{')
# Where two records glued on one line meet (inside a string it only costs a parse).
GLUE_POINT = Lazy(rb'\}[ \t\r\n]*\{"')
MEMORY_FILE_BYTES = Lazy(("(?:" + "|".join(map(re.escape, MEMORY_FILE_NAMES)) + ')"').encode())
# An edit call's leading path: searched instead of the line, as a Write's content can be MBs.
EDIT_PATH = Lazy(rb',\s*"input":\s*\{\s*(?:"replace_all":\s*(?:true|false),\s*)?"file_path":\s*"[^"\\]*(?:\\.[^"\\]*)*"')


def next_text_block(raw: bytes, start: int, end: int, spaced: bool) -> bool:
    """Whether the text block at `end` follows the one ending at `start` in one content list
    (NEXT_TEXT); without `\\\\` in the text, byte counts of quotes answer."""
    head = TEXT_KEY.match(raw, start)
    tail = b'"}, {' if spaced else b'"},{'
    if head and raw.endswith(tail, head.end(), end):
        body = head.end(), end - len(tail)
        if raw.find(b"\\\\", *body) < 0 and raw.count(b'"', *body) == raw.count(b'\\"', *body) \
                and raw[body[1] - 1:body[1]] != b"\\":
            return True
    return bool(NEXT_TEXT.fullmatch(raw, start, end))


TEXT_KEY = Lazy(rb',\s?"text":\s?"')


def opens_tool_texts(raw: bytes, at: int) -> bool:
    """Whether the text block at `at` opens a tool result's list: cheap byte tests first."""
    return raw.endswith(CONTENT_LIST, 0, at) and raw.find(b"tool_result", max(at - TOOL_RESULT_REACH, 0), at) >= 0 \
        and bool(TOOL_TEXTS.fullmatch(raw, max(raw.rfind(b'{"tool_use_id"', 0, at), 0), at))


def claude_reader(opts: Options) -> Any:
    """Claude Code session JSONL; tool results ride in user records and are not speech."""
    def read(record: Any, line: int) -> Outcome:
        message = record.get("message") if isinstance(record, dict) else None
        kind = record.get("type") if isinstance(message, dict) else None
        if kind not in ("user", "assistant"):
            return "skipped_meta", []
        if record.get("isSidechain") and not opts.include_sidechains:
            return "skipped_sidechain", []
        summary = bool(record.get("isCompactSummary"))
        if summary and not opts.include_summaries:
            return "skipped_summary", []
        # A compaction summary is also marked isVisibleInTranscriptOnly; asked for, it is read.
        if record.get("isMeta") or record.get("isApiErrorMessage") or message.get("model") == "<synthetic>" \
                or (record.get("isVisibleInTranscriptOnly") and not summary):
            return "skipped_meta", []
        # A compaction summary is the model's words, whatever record carries it.
        role = "user" if kind == "user" and not summary else "assistant"
        content = message.get("content")
        conversation = session_id(record, "claude") or ""
        if summary and role in opts.roles:  # asked for: past its boilerplate first line
            content = [{"type": "text", "text": _after_first_line(content)}]
        outcome, found = read_turn(opts, role, content, line, record.get("timestamp"), conversation)
        if role == "assistant" and role in opts.roles and isinstance(content, list):
            return outcome, [*found, *memory_writes(content, line)]
        return outcome, found
    return read


EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write"})


def memory_writes(blocks: list[Any], line: int) -> list[MemoryWrite]:
    """The lines an assistant record's edit calls add to a memory file, not in the old text."""
    found = []
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") != "tool_use" or block.get("name") not in EDIT_TOOLS:
            continue
        tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
        target = os.path.basename(_str(tool_input.get("file_path")).replace("\\", "/"))
        if target not in MEMORY_FILE_NAMES:
            continue
        edits = tool_input.get("edits") if isinstance(tool_input.get("edits"), list) else [tool_input]
        added: list[str] = []
        for edit in edits:
            if not isinstance(edit, dict):
                continue
            old = set(_str(edit.get("old_string")).split("\n"))
            new = _str(edit.get("new_string")) or _str(edit.get("content"))
            added += [text for text in new.split("\n") if text.strip() and text not in old]
        if added:
            found.append(MemoryWrite(line, target, tuple(added)))
    return found


def _after_first_line(content: Any) -> str:
    text = content if isinstance(content, str) else " ".join(
        _str(b.get("text")) for b in content if isinstance(b, dict)) if isinstance(content, list) else ""
    return text.split("\n", 1)[-1]


CODEX_ITEM_SKIP = skip_reasons(
    skipped_thinking="reasoning",
    skipped_tool_call="function_call custom_tool_call local_shell_call web_search_call tool_search_call"
                      " image_generation_call",
    skipped_tool_output="function_call_output custom_tool_call_output tool_search_output")


class CodexReader:
    """Codex CLI rollouts; event_msg repeats response_item messages: read only without them."""

    def __init__(self, opts: Options, stats: Counter[str]) -> None:
        self.opts = opts
        self.stats = stats
        self.seen_items = False
        self.events: list[Message] = []

    def __call__(self, record: Any, line: int) -> Outcome:
        kind = _str(record.get("type")) if isinstance(record, dict) else ""
        payload = record.get("payload") if kind in CODEX_TYPES else record
        if not isinstance(payload, dict):
            return "skipped_meta", []
        stamp = record.get("timestamp")
        if kind == "event_msg":
            event = payload.get("type")
            if event not in ("user_message", "agent_message"):
                return "skipped_meta", []
            role = "user" if event == "user_message" else "assistant"
            if role in self.opts.roles and not self.seen_items:
                _, texts = content_texts(payload.get("message"))
                self.events += _messages(role, texts, line, stamp)
            return "skipped_duplicate_event", []
        if kind == "compacted":
            if not self.opts.include_summaries or "assistant" not in self.opts.roles:
                return "skipped_summary", []
            outcome, texts = content_texts(payload.get("message"))
            return outcome, _messages("assistant", texts, line, stamp)
        if kind not in ("response_item", "message", "") or payload.get("type") != "message":
            return CODEX_ITEM_SKIP.get(str(payload.get("type")), "skipped_meta"), []
        role = _str(payload.get("role"))
        if role not in ("user", "assistant"):
            return "skipped_meta", []  # developer and system: instructions, not speech
        self.seen_items = True
        self.events = []
        return read_turn(self.opts, role, payload.get("content"), line, stamp)

    def read(self, lines: Iterable[bytes], pos: Position) -> Iterator[Message]:
        yield from read_jsonl(lines, self, self.stats, pos)
        if not self.seen_items and self.events:  # no response_item messages: events are the prose
            lines = min(len({m.line for m in self.events}), self.stats["skipped_duplicate_event"])
            self.stats.update(skipped_duplicate_event=-lines, prose=lines)
            yield from self.events


# Copilot CLI's session-state/<id>/events.jsonl (github/copilot-sdk, session-events.ts).
COPILOT_SKIP = skip_reasons(
    skipped_thinking="assistant.reasoning assistant.reasoning_delta",
    skipped_tool_call="tool.execution_start tool.user_requested external_tool.requested",
    skipped_tool_output="tool.execution_complete tool.execution_partial_result external_tool.completed",
    skipped_duplicate_event="assistant.message_delta assistant.streaming_delta")
COPILOT_TYPES = frozenset({"session.start", "session.resume", "user.message", "assistant.message",
                           "assistant.turn_start", "session.info", "session.model_change"})


def copilot_reader(opts: Options) -> Any:
    """Copilot CLI events; a sub-agent's are sidechains, a skill's user message is injected."""
    def read(record: Any, line: int) -> Outcome:
        if not isinstance(record, dict) or not isinstance(record.get("data"), dict):
            return "skipped_meta", []
        kind, data = _str(record.get("type")), record["data"]
        if kind == "session.compaction_complete" and isinstance(data.get("summaryContent"), str):
            if not opts.include_summaries:
                return "skipped_summary", []
            kind, data = "assistant.message", {"content": data["summaryContent"]}
        elif kind not in ("user.message", "assistant.message"):
            return COPILOT_SKIP.get(kind, "skipped_meta"), []
        if (record.get("agentId") or data.get("parentToolCallId")) and not opts.include_sidechains:
            return "skipped_sidechain", []
        role = "user" if kind == "user.message" else "assistant"
        if role == "user" and (data.get("isAutopilotContinuation")
                               or _str(data.get("source")).startswith(("skill-", "agent-", "system"))):
            return "skipped_injected", []
        return read_turn(opts, role, data.get("content"), line, record.get("timestamp"),
                         calls=data.get("toolRequests"))
    return read


# OpenCode keeps every project's sessions in one opencode.db (session.sql.ts), read as one input.
OPENCODE_TABLES = frozenset({"session", "message", "part"})
OPENCODE_PART_KIND = {"text": "text", "reasoning": "reasoning", "tool": "tool_use"}


def open_sqlite(path: str) -> Any:
    """A read-only connection (sqlite3 is imported here: most runs read no database)."""
    import sqlite3
    uri = "file:" + urllib.parse.quote(os.path.abspath(path))
    try:
        db = sqlite3.connect(uri + "?mode=ro", uri=True)
        db.execute("SELECT name FROM sqlite_master").fetchall()
        return db
    except sqlite3.Error:
        # A WAL database in a folder it cannot write to: read what is checkpointed.
        try:
            return sqlite3.connect(uri + "?immutable=1", uri=True)
        except sqlite3.Error as exc:
            raise UserError(path, f"cannot open the database: {exc}") from None


def is_opencode_db(path: str, root: str | None = None) -> bool:
    """Whether a database is OpenCode's (given `root`: with a session started inside it)."""
    import sqlite3
    try:
        with contextlib.closing(open_sqlite(path)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            return OPENCODE_TABLES <= tables and (root is None or bool(opencode_sessions(db, root)))
    except (UserError, sqlite3.Error):
        return False


def opencode_sessions(db: Any, root: str) -> list[tuple[str, str | None]]:
    """(id, parent id) of the sessions started inside `root`, oldest first."""
    rows = db.execute("SELECT id, parent_id, directory FROM session ORDER BY time_created, id").fetchall()
    return [(sid, parent) for sid, parent, directory in rows if inside(directory, root)]


def read_opencode(path: str, opts: Options, stats: Counter[str]) -> Iterator[Message]:
    """This repository's OpenCode messages, each a record; a child session is a sidechain."""
    import sqlite3
    try:
        with contextlib.closing(open_sqlite(path)) as db:
            index = 0
            for sid, parent in opencode_sessions(db, opts.root):
                parts: dict[str, list[Any]] = {}
                for message_id, data in db.execute(
                        "SELECT message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id", (sid,)):
                    parts.setdefault(message_id, []).append(data)
                for message_id, data in db.execute(
                        "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id", (sid,)):
                    index += 1
                    stats["lines"] += 1
                    outcome, found = _opencode_message(data, parts.get(message_id, []), parent, index, opts)
                    stats[outcome] += 1
                    stats["parsed"] += outcome != "malformed"
                    yield from found
    except sqlite3.Error as exc:
        raise UserError(path, f"cannot read the OpenCode database: {exc}") from None


def _opencode_message(data: Any, parts: list[Any], parent: Any, index: int, opts: Options) -> Outcome:
    try:
        info = json.loads(data)
    except (TypeError, ValueError, RecursionError):
        return "malformed", []
    role = _str(info.get("role")) if isinstance(info, dict) else ""
    if role not in ("user", "assistant"):
        return "skipped_meta", []
    if parent and not opts.include_sidechains:
        return "skipped_sidechain", []
    if info.get("summary") is True and not opts.include_summaries:
        return "skipped_summary", []
    if role not in opts.roles:
        return "skipped_role", []
    blocks: list[Any] = []
    for raw in parts:
        try:
            part = json.loads(raw)
        except (TypeError, ValueError, RecursionError):
            continue
        if isinstance(part, dict):
            kind = OPENCODE_PART_KIND.get(_str(part.get("type")), "other")
            own = kind == "text" and (part.get("synthetic") or part.get("ignored"))
            blocks.append("" if own else {"type": kind, "text": part.get("text")})  # "": injected
    outcome, texts = content_texts(blocks)
    if outcome == "skipped_empty" and "" in blocks:
        outcome = "skipped_injected"
    time = info.get("time")
    return outcome, _messages(role, texts, index, time.get("created") if isinstance(time, dict) else None)


def gemini_reader(opts: Options) -> Any:
    """Gemini CLI recordings ({messages: [{type, content}]}) and /chat save checkpoints."""
    def read(msg: Any, index: int) -> Outcome:
        role = {"user": "user", "gemini": "assistant", "model": "assistant"}.get(
            str(msg.get("type") or msg.get("role"))) if isinstance(msg, dict) else None
        if role is None:
            return "skipped_meta", []  # info, error, warning
        content = msg.get("content", msg.get("parts"))
        return read_turn(opts, role, content, index, msg.get("timestamp"),
                         calls=msg.get("toolCalls"))
    return read


def messages_reader(opts: Options, cline: bool = False) -> Any:
    """OpenAI or Anthropic {role, content} (or fine-tune {"messages": [...]}), and Cline's."""
    def read(msg: Any, index: int) -> Outcome:
        if isinstance(msg, dict) and isinstance(msg.get("messages"), list):
            found = [read(m, index) for m in msg["messages"]]
            texts = [m for _, ms in found for m in ms]
            return ("prose" if texts else found[0][0] if found else "skipped_empty"), texts
        role = _str(msg.get("role")) if isinstance(msg, dict) else ""
        if role in ("tool", "function"):
            return "skipped_tool_output", []
        if role not in ("user", "assistant"):
            return "skipped_meta", []  # system, developer
        content = msg.get("content")
        if cline and isinstance(content, list):
            content = _cline_content(content)
        stamp = msg.get("ts") or msg.get("timestamp") or msg.get("created_at")
        return read_turn(opts, role, content, index, stamp, clean=_cline_text if cline else None)
    return read


CLINE_USER_WORDS = ("<feedback>", "<answer>", "<user_message>")


def _cline_content(blocks: list[Any]) -> list[Any]:
    """Cline blocks without tool output: `[tool for 'x'] Result:` and, alone, the next block."""
    out: list[Any] = []
    skip_next = False
    for block in blocks:
        text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
        text = text.lstrip() if isinstance(text, str) else None
        if text is not None and skip_next and not text.startswith(CLINE_USER_WORDS):
            skip_next = False
        elif text is not None and (header := CLINE_TOOL_RESULT.match(text)):
            skip_next = not text[header.end():].strip() and not re.match(
                r"\[(?:attempt_completion|ask_followup_question)\b", text)
        else:
            skip_next = False
            out.append(_cline_block(block))
            continue
        out.append({"type": "tool_result"})
    return out


def _cline_block(block: Any) -> Any:
    # attempt_completion's result is the final answer: prose, not a tool call.
    if isinstance(block, dict) and block.get("type") == "tool_use" \
            and block.get("name") in ("attempt_completion", "plan_mode_respond"):
        tool_input = block.get("input") or {}
        for key in ("result", "response"):
            if isinstance(tool_input.get(key), str):
                return {"type": "text", "text": tool_input[key]}
    return block


def _cline_text(text: str) -> str:
    if CLINE_TOOL_RESULT.match(text.lstrip()):
        return ""
    return CLINE_KEEP_XML.sub("", CLINE_TOOL_XML.sub("", text))


AIDER_STARTS = (b"# aider chat", b"-*- mode", b"#### ")
AIDER_HEADER = Lazy(r"^# aider chat started at (.+?)\s*$")
AIDER_COMMAND = Lazy(r"/[a-z][a-z-]*(?:\s|$)")  # `/add x`, `/ask x`; not `/usr/local`


def read_aider(lines: Iterable[bytes], opts: Options, stats: Counter[str],
               pos: Position) -> Iterator[Message]:
    """Aider .aider.chat.history.md: `#### ` lines are the user, `> ` lines tool output, the
    rest the assistant. A line is a record and a message, so a sentence keeps its line; code
    fenced in either's turn is code."""
    stamp: str | None = None
    in_edit = False
    fence = ""  # the fence open in the turn of `speaker`; a fence ends with its turn
    speaker = ""
    quoted = False  # the line before is tool output: a line right after it continues it
    number = 0
    for number, raw in enumerate(lines, 1):
        stats["lines"] += 1
        line = raw.decode("utf-8", "replace").rstrip("\r\n").lstrip("\ufeff" if number == 1 else "")
        header = AIDER_HEADER.match(line)
        stamp = header.group(1) if header else stamp  # dates what follows, reviewed or not
        if number <= pos.skip:
            stats["skipped_baseline"] += 1
            continue
        user = line.startswith("#### ") or line.rstrip() == "####"
        text = line[5:].rstrip() if user else line
        # Markdown's lazy continuation: a line right after a quote's, not a turn's nor a fence's,
        # is the quote's (Aider's repo-map header, a traceback, a `--message` echoed).
        lazy = quoted and bool(line.strip()) and not user and not header and not FENCE.match(line)
        meta = bool(header) or line.startswith(("-*- mode:", "> ")) or line.rstrip() == ">" or lazy
        quoted = meta and not header and bool(line.strip(" >"))
        turn = "user" if user else "tool" if meta else "assistant" if line.strip() else speaker
        if turn != speaker:
            fence, speaker = "", turn
        command = user and not fence and AIDER_COMMAND.match(text)
        if header or line.startswith("-*- mode:") or command:
            # Headers, and commands: `/ask X` is followed by a copy `#### X`, the one read.
            stats["skipped_meta"] += 1
        elif meta:
            stats["skipped_tool_output"] += 1
        elif not user and not line.strip():
            stats["blank"] += 1
        elif fence or FENCE.match(text) and (user or not in_edit):  # fenced code, in either's turn
            fence = fence_after(fence, text)[0]
            stats["skipped_tool_output"] += 1
        elif user:
            if text.strip() and "user" in opts.roles:
                stats["prose"] += 1
                yield Message("user", text.strip(), number, stamp)
            else:
                stats["skipped_role" if text.strip() else "blank"] += 1
        elif in_edit or line.startswith("<<<<<<< SEARCH"):
            # SEARCH/REPLACE edit blocks (even unfenced) are file contents.
            in_edit = not line.startswith(">>>>>>> REPLACE")
            stats["skipped_tool_output"] += 1
        else:  # out of --roles, set aside for a request that points back (see read_turn)
            judged = "assistant" in opts.roles
            stats["prose" if judged else "skipped_role"] += 1
            yield Message("assistant", line.strip(), number, stamp, "", judged)
    pos.through = number


# A SpecStory turn (markdown.go v2.1.0): `_**User**_`, `_**Agent - sidechain (model time)**_`;
# mid-2025 files end `(sidechain)`, other exporters add a name after a colon.
SPECSTORY_TURN = Lazy(r"_\*\*(User|Assistant|Agent)( - sidechain)?(?::[^*()]*)?(?: \((.*?)\))?"
                      r"( \(sidechain\))?\*\*_")
SPECSTORY_MARK = b"<!-- Generated by SpecStory"
# `<!-- Claude Code Session <id> (<time>) -->`: the tool and its own session id.
SPECSTORY_SESSION = Lazy(r"<!-- (.+?) Session (\S+)(?: \(.*\))? -->")
# A time in a turn header, title or file name (2025-11-13 21:12:14-0700, 2026-01-16_16-26-02Z).
SPECSTORY_TIME = Lazy(r"(\d{4})-(\d\d)-(\d\d)[ T_](\d\d)[:-](\d\d)(?:[:-](\d\d)(?:\.\d+)?)?"
                      r"(Z|[+-]\d\d:?\d\d)?")
SPECSTORY_BLOCKS = {"<tool-use": ("</tool-use>", "skipped_tool_call"),
                    "<think": ("</think>", "skipped_thinking")}
# Wrappers Claude Code injects into a User turn, here spread over lines.
SPECSTORY_INJECTED = tuple(f"<{tag}" for tag in INJECTED_TAGS + ("task-notification", "persisted-output"))


class SpecStoryTurns:
    """Where a SpecStory history stands: its turn, and the block, fence or wrapper open."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.role = ""           # "" before the first turn
        self.skip = ""           # the counter of a turn that is not read (sidechain, role, ...)
        self.stamp: str | None = None
        self.close = self.reason = ""  # the open block: the text that closes it, its counter
        self.details = 0         # depth of bare <details> blocks (the 2025 layout's tool calls)
        self.fence = ""
        self.first = False       # the next text line is the turn's first
        self.command_at: str | None = None  # time of a turn that invoked a slash command

    def turn(self, match: re.Match[str]) -> str:
        """A turn header: who speaks next, and whether it is read."""
        who, sidechain, detail = match.group(1), match.group(2) or match.group(4), match.group(3) or ""
        when = SPECSTORY_TIME.search(detail)
        self.stamp = when.group() if when else None
        self.fence, self.first = "", True
        # A sidechain's User turn is the prompt the main agent gave its subagent.
        self.role = "user" if who == "User" and not sidechain else "assistant"
        self.skip = "skipped_sidechain" if sidechain and not self.opts.include_sidechains else \
            "skipped_meta" if "<synthetic>" in detail else \
            "skipped_role" if self.role not in self.opts.roles else ""
        if self.role == "user" and self.command_at is not None and self.stamp == self.command_at:
            # A slash command's expansion, written in the command's second: a template.
            self.skip = self.skip or "skipped_meta"
        self.command_at = None
        return "skipped_meta"

    def kind(self, line: str) -> str:
        """The counter a line lands in: "prose" for a line of a turn that is read."""
        text = line.strip()
        turn = SPECSTORY_TURN.fullmatch(text) if text.startswith("_**") and not (self.close or self.details) else None
        if turn:
            return self.turn(turn)
        if not text:
            return "blank"
        if self.close or self.details:
            if self.close:
                self.close = "" if self.close in text else self.close
            else:
                self.details += text.count("<details") - text.count("</details")
            return self.reason
        if not self.role:
            return "skipped_meta"  # header comments and the title
        if self.fence:
            self.fence = fence_after(self.fence, line)[0]
            return "skipped_tool_output"
        return self.block(line, text) or self.spoken(text)

    def block(self, line: str, text: str) -> str:
        """The counter of a line that opens what is not prose, or ""."""
        tag = next((tag for tag in SPECSTORY_BLOCKS if text.startswith(tag)), None)
        if tag:
            self.close, self.reason = SPECSTORY_BLOCKS[tag]
            self.close = "" if self.close in text else self.close
            return self.reason
        if text.startswith("<details"):
            self.details = text.count("<details") - text.count("</details")
            self.reason = "skipped_tool_call"
            return self.reason
        self.fence, fenced = fence_after("", line)
        if fenced:
            return "skipped_tool_output"
        if text == "---" or (text.startswith("<!--") and text.endswith("-->")):
            return "skipped_meta"  # separators, message-id comments
        if text.startswith("Tool use: **"):
            return "skipped_tool_call"  # an early layout's tool call outside a block
        if self.role == "user" and text.startswith(SPECSTORY_INJECTED):
            tag = text[1:].split(">", 1)[0].split(None, 1)[0]
            if tag in ("command-name", "command-message"):
                self.command_at = self.stamp
            self.close = "" if f"</{tag}>" in text else f"</{tag}>"
            self.reason = "skipped_injected"
            return self.reason
        return ""

    def spoken(self, text: str) -> str:
        """The counter of a line of a turn's text: "prose" where it is read."""
        if self.first and self.role == "user" and not self.skip and text.startswith(COMPACTION_OPENING):
            # A compaction summary: the model's words after this line, read when asked for.
            self.role, self.first = "assistant", False
            self.skip = "skipped_summary" if not self.opts.include_summaries else \
                "skipped_role" if self.role not in self.opts.roles else ""
            return "skipped_summary"
        self.first = False
        return self.skip or "prose"


def read_specstory(lines: Iterable[bytes], opts: Options, stats: Counter[str],
                   pos: Position) -> Iterator[Message]:
    """SpecStory Markdown, a line a record, as Aider's; reviewed lines still open turns."""
    turns = SpecStoryTurns(opts)
    number = 0
    for number, raw in enumerate(lines, 1):
        line = raw.decode("utf-8", "replace").rstrip("\r\n").lstrip("\ufeff" if number == 1 else "")
        kind = turns.kind(line)
        visible = (strip_injected(line) if turns.role == "user" else line.strip()) if kind == "prose" else ""
        if number > pos.skip:
            stats["lines"] += 1
            stats["skipped_injected" if kind == "prose" and not visible else kind] += 1
            if visible:
                yield Message(turns.role, visible, number, turns.stamp)
    stats.update(lines=min(number, pos.skip), skipped_baseline=min(number, pos.skip))
    pos.through = number


# -- agents' own memory: note folders ---------------------------------------------------
# Notes a model saved, unreviewed: Claude Code's auto memory (FORMATS.md section 15), and of
# Codex's ~/.codex/memories, whose layout changes between releases, MEMORY.md's bullets.
NOTE_INDEX = "MEMORY.md"
NOTE_TYPES = frozenset({"user", "feedback", "project", "reference"})
NOTE_DEFAULT_TYPE = "project"  # a missing or unknown type; provenance says so
FRONTMATTER_FENCE = Lazy(r"---[ \t]*")
FRONTMATTER_FIELD = Lazy(r"([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*?)[ \t]*")
# A note's reason and its instructions: `**Why:**` may join the note, `**How to apply:**` never.
NOTE_LABEL = Lazy(r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?(why|how to apply)\s*:?\s*(?:\*\*|__)?\s*:?\s*", re.I)
TOP_BULLET = Lazy(r"^(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
# An index line of MEMORY.md: a bullet opening with a link to a note file, read itself.
INDEX_LINK = Lazy(r"\[[^\]]*\]\((?![A-Za-z][A-Za-z0-9+.-]*:)[^)\s]+\.md(?:#[^)\s]*)?\)")
CODEX_METADATA = Lazy(r"[a-z][a-z_ ]{0,30}:(?:\s|$)")  # `- keywords: ...`, `- rollout_summary_files:`


class Note(NamedTuple):
    line: int
    text: str
    declared: str  # the type as written, "" when none


def read_notes(text: str, kind: str, stats: Counter[str]) -> list[Note]:
    """A memory file's notes: a frontmatter file's one, or each top-level bullet."""
    lines = [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    stats.update(lines=len(lines), blank=sum(1 for line in lines if not line.strip()))
    notes = _frontmatter_note(lines) if lines and FRONTMATTER_FENCE.fullmatch(lines[0]) else None
    if notes is None:
        notes = _bullet_notes(lines, kind)
    stats["prose"] += len(notes)
    stats["skipped_meta"] += sum(1 for line in lines if line.strip()) - len(notes)
    return notes


def _frontmatter_note(lines: list[str]) -> list[Note] | None:
    """A frontmatter file's first paragraph, else its description; None when never closed."""
    end = next((i for i in range(1, len(lines)) if FRONTMATTER_FENCE.fullmatch(lines[i])), None)
    if end is None:
        return None
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        match = FRONTMATTER_FIELD.fullmatch(line)
        if match:
            value = match.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            fields[match.group(1).lower()] = value
    declared = fields.get("type", "").strip().lower()
    at, body = end + 1, lines[end + 1:]
    first: list[str] = []
    first_line = 0
    for number, line in unfenced(body):
        stripped = line.strip()
        if NOTE_LABEL.match(line) or not stripped:
            if first:
                break
            continue
        if not first and stripped.startswith("#"):
            continue  # a title over the body
        if first and TOP_BULLET.match(stripped):
            break  # of a list, its first item is the paragraph
        if not first:
            first_line = at + number + 1
            stripped = TOP_BULLET.sub("", stripped)
        first.append(stripped)
    if first:
        return [Note(first_line, _with_reason(" ".join(first), _reason(body)), declared)]
    description = fields.get("description", "").strip()
    if description:
        line = next(i for i in range(1, end) if FRONTMATTER_FIELD.fullmatch(lines[i])
                    and lines[i].split(":", 1)[0].strip().lower() == "description")
        return [Note(line + 1, description, declared)]
    return []


def _reason(body: list[str]) -> str:
    """The paragraph after a note's `**Why:**` label, as one line, or ""."""
    for number, line in unfenced(body):
        label = NOTE_LABEL.match(line)
        if label and label.group(1).lower() == "why":
            rest = itertools.takewhile(lambda more: more.strip() and not NOTE_LABEL.match(more),
                                       body[number + 1:])
            why = [line[label.end():].strip(), *(more.strip() for more in rest)]
            return " ".join(w for w in why if w)
    return ""


def _with_reason(rule: str, why: str) -> str:
    """The note, cut to its first sentence when too long, and `Why:` when that fits."""
    if width(rule) > MAX_WIDTH:
        rule = (_split_line(rule) or [rule])[0]
    if why:
        joined = f"{rule}{'' if rule.endswith(('.', '!', '。', '！')) else '.'} Why: {why}"
        if width(joined) <= MAX_WIDTH:
            return joined
    return rule


def _bullet_notes(lines: list[str], kind: str) -> list[Note]:
    """Each top-level bullet with its continuation lines, but not one linking a note file."""
    notes: list[Note] = []
    current: list[str] = []
    start = 0

    def close() -> None:
        if current:
            notes.append(Note(start, " ".join(current), ""))
            current.clear()

    for number, line in unfenced(lines):
        bullet = TOP_BULLET.match(line)
        if bullet:
            close()
            item = line[bullet.end():].strip()
            if INDEX_LINK.match(item) or kind == "codex-memory" and CODEX_METADATA.match(item):
                continue
            if item:
                current.append(item)
                start = number + 1
        elif current and line.strip() and line[:1] in " \t" and not TOP_BULLET.match(line.strip()):
            current.append(line.strip())
        else:
            close()
    close()
    return notes


# The rules know only English and Chinese: --stats names these scripts, which give nothing.
UNCOVERED_SCRIPTS = (
    (0x0370, 0x03FF, "greek"), (0x0400, 0x052F, "cyrillic"), (0x0590, 0x05FF, "hebrew"),
    (0x0600, 0x06FF, "arabic"), (0x0900, 0x0DFF, "indic"), (0x0E00, 0x0E7F, "thai"),
    (0x3040, 0x30FF, "kana"), (0x1100, 0x11FF, "hangul"), (0xAC00, 0xD7AF, "hangul"))
SCRIPT_SAMPLE = 2000  # characters of a message looked at: enough to tell its script


def count_scripts(messages: Iterable[Message], stats: Counter[str]) -> Iterator[Message]:
    """Count messages mostly in an uncovered script (uncovered_script, and _NAME by script)."""
    for message in messages:
        text = message.text if isinstance(message, Message) else ""
        if not text.isascii():
            codes = [ord(char) for char in text[:SCRIPT_SAMPLE] if char.isalpha()]
            scripts = Counter(n for c in codes for lo, hi, n in UNCOVERED_SCRIPTS if lo <= c <= hi)
            if sum(scripts.values()) * 2 > len(codes):
                stats["uncovered_script"] += 1
                stats[f"uncovered_script_{scripts.most_common(1)[0][0]}"] += 1
        yield message


def script_note(stats: Counter[str]) -> str | None:
    """A note for --stats when most messages are in a script the rules do not cover."""
    if not stats["messages"] or stats["uncovered_script"] * 2 <= stats["messages"]:
        return None
    names = sorted((k.removeprefix("uncovered_script_") for k in stats if k.startswith("uncovered_script_")),
                   key=lambda n: (-stats[f"uncovered_script_{n}"], n))
    return (f"most prose is in a script the rules do not cover ({', '.join(names)}): "
            "they know English and Chinese, so nothing in it can be proposed")


# Timestamps are printed: only a date-and-time shape, so no text or token rides in on one.
TIMESTAMP = Lazy(r"[0-9][0-9T:., /+Z-]{3,39}")


def _timestamp(value: Any) -> str | None:
    if isinstance(value, str):
        return value if TIMESTAMP.fullmatch(value) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        seconds = value / 1000 if value > 1e11 else value  # epoch ms (Cline) or s
        try:
            moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


# -- format sniffing --------------------------------------------------------------------

def looks_like_specstory(body: bytes, lines: list[bytes]) -> bool:
    """SpecStory's header or a turn line, as its `#` title and `#### ` are Aider's too."""
    return body.startswith(SPECSTORY_MARK) or any(
        raw.startswith(b"_**") and SPECSTORY_TURN.fullmatch(raw.decode("utf-8", "replace").strip())
        for raw in lines)


CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
CLAUDE_TYPES = frozenset({"user", "assistant", "summary", "system", "progress",
                          "file-history-snapshot", "queue-operation", "last-prompt"})
# Lines of several MB (whole files, images) are common: a large buffer reads them in few calls.
READ_BUFFER = 1 << 20
# Enough of a file to get past Claude Code's summary and snapshot records, capped in bytes.
SNIFF_LINES = 20
SNIFF_BYTES = 4 << 20

# Formats recognised but not read: an error names the format, as no --format reads it.
NOT_READ = {
    "swe-agent": "a SWE-agent trajectory",
    "openhands": "an OpenHands event stream",
    "chatgpt": "a ChatGPT data export",
    "claude-ai": "a Claude.ai data export",
    "langchain": "LangChain messages",
    "vscode-chat": "a VS Code Copilot Chat session (export it with SpecStory)",
    "opencode-storage": "an OpenCode storage file (one message or part; OpenCode keeps sessions in opencode.db)",
    "vscdb": "a Cursor or VS Code state database (export its chats with SpecStory)",
    "sqlite": "an SQLite database that is no OpenCode store",
}
SQLITE_MAGIC = b"SQLite format 3\x00"
LANGCHAIN_TYPES = frozenset({"human", "ai", "system", "tool", "function", "chat"})
OPENCODE_ID = Lazy(r"(?:ses|msg|prt)_[0-9A-Za-z]{20,}")


def not_read(doc: Any) -> str | None:
    """Which recognised, unread format a JSON document or first record is in."""
    if isinstance(doc, dict):
        if "trajectory" in doc and "history" in doc:
            return "swe-agent"
        if isinstance(doc.get("requests"), list) and "responderUsername" in doc:
            return "vscode-chat"
        if doc.get("lc") == 1 and doc.get("type") == "constructor":
            return "langchain"
        if isinstance(doc.get("kind"), str) and doc["kind"].endswith("Event") and "source" in doc:
            return "openhands"
        if OPENCODE_ID.fullmatch(_str(doc.get("id"))) and ("sessionID" in doc or "messageID" in doc
                                                             or "projectID" in doc):
            return "opencode-storage"
        return None
    if isinstance(doc, list):
        first = next((m for m in doc if isinstance(m, dict)), None)
        if first is None:
            return None
        if "mapping" in first and "current_node" in first:
            return "chatgpt"
        if "chat_messages" in first:
            return "claude-ai"
        if "source" in first and ("action" in first or "observation" in first):
            return "openhands"
        if first.get("type") in LANGCHAIN_TYPES and isinstance(first.get("data"), dict):
            return "langchain"
        return not_read(first) if first.get("lc") == 1 else None
    return None


def sniff_records(records: Iterable[Any]) -> str | None:
    for record in records:
        if not isinstance(record, dict):
            continue
        kind = _str(record.get("type"))
        if kind in CODEX_TYPES and "payload" in record:
            return "codex"
        if kind in COPILOT_TYPES and isinstance(record.get("data"), dict) and "parentId" in record:
            return "copilot"
        if "record_type" in record or "instructions" in record and "id" in record \
                or kind == "message" and "role" in record:
            return "codex"  # legacy flat rollout
        if kind in CLAUDE_TYPES and record.keys() & {"message", "uuid", "leafUuid", "messageId"} \
                or "parentUuid" in record or "sessionId" in record and "message" in record:
            return "claude"
        if "role" in record and "text" in record:
            return "native"
        if isinstance(record.get("messages"), list):
            return sniff_document(record)  # a whole session on one line
        if "role" in record and "content" in record:
            return "messages"
        unread = not_read(record)
        if unread:
            return unread
    return None


def sniff_document(doc: Any) -> str | None:
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        typed = any(isinstance(m, dict) and m.get("type") in ("gemini", "user") and "role" not in m
                    for m in doc["messages"][:5])
        return "gemini" if "projectHash" in doc or typed else "messages"
    if isinstance(doc, list):
        first = next((m for m in doc if isinstance(m, dict)), None)
        if first is None:
            return "messages"
        if "role" in first and "parts" in first:
            return "gemini"
        if "role" in first and "content" in first:
            return "cline" if "ts" in first else "messages"
    return not_read(doc)


# == Sentences: visible text in, candidate sentences out (pure). =======================

BULLET = Lazy(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
LINE_BREAK = Lazy(f"{OTHER_BREAKS.pattern}|\n")
RULE_LINE = Lazy(r"[-=*_\s]{3,}")


def unfenced(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(index, line) of the lines outside fenced code blocks (fence_after)."""
    fence = ""
    for index, line in enumerate(lines):
        fence, fenced = fence_after(fence, line)
        if not fenced:
            yield index, line


def split_sentences(text: str) -> list[str]:
    """Sentences of prose, skipping code blocks, table rows and rules (markers stripped)."""
    out: list[str] = []
    for _, line in unfenced(LINE_BREAK.split(text)):
        stripped = line.strip()
        if not stripped or stripped.startswith("|") or RULE_LINE.fullmatch(stripped):
            continue
        out.extend(_split_line(strip_emphasis(LIST_MARKER.sub("", stripped)).strip()))
    return out


def strip_emphasis(text: str) -> str:
    """Bold markers go; a run of three asterisks or more and a code span (`**kwargs`) stay."""
    if "**" not in text:
        return text
    if "`" not in text:
        return EMPHASIS.sub("", text)
    return CODE_OR_EMPHASIS.sub(lambda match: match.group(1) or "", text)


def _split_line(line: str) -> list[str]:
    pieces, start = [], 0
    for match in SENTENCE_END.finditer(line):
        end = match.end()
        if QUOTE_GOES_ON.match(match.group()) and line[end:end + 1].islower():
            continue  # the mark ends a quotation the sentence goes on after: `like "Proceed?" if`
        if match.group().startswith(".") and not match.group().startswith(".."):
            token = (line[start:match.start()].split() or [""])[-1].lower().lstrip("(\"'")
            if token in ABBREVIATIONS or (len(token) == 1 and token != token.upper()):
                continue  # e.g. / i.e. / vs. / an initial (a cased letter: not Korean 마)
            opened = line.rfind("(", start, end)  # not a smiley's: ":(" and ":)"
            if opened > line.rfind(")", start, end) and line[opened - 1:opened] not in (":", ";") \
                    and PAREN_CLOSE.search(line[end:end + INSIDE_PARENS].partition("(")[0]):
                continue  # inside parentheses that close soon: "(max. 5 tries)", "(z.B. Pinia)"
        pieces.append(line[start:end].strip())
        start = end
    return [piece for piece in [*pieces, line[start:].strip()] if piece]


def width(text: str, wide: int = 2) -> int:
    """Terminal columns, a wide or full-width character counting `wide` (the score uses 3)."""
    if text.isascii():  # most sentences: no character to look up
        return len(text)
    return len(text) + (wide - 1) * sum(unicodedata.east_asian_width(c) in "WF" for c in text)


def normalize(text: str) -> str:
    """The comparison key: case, spacing, a bullet marker and end punctuation do not count."""
    text = strip_emphasis(unicodedata.normalize("NFKC", text).casefold())
    text = BULLET.sub("", text)
    text = " ".join(text.split())
    return text.rstrip(" .。!！?？;；:：,，")


# -- gates -----------------------------------------------------------------------------

SECRET_MARK = "\ue000"  # private-use character standing for a withheld credential of a named kind
RANDOM_MARK = "\ue001"  # the same for a token withheld by its value alone (random_token)
RANDOM_KIND = "random_token"


class SecretHit(NamedTuple):
    kind: str
    start: int
    end: int
    example: bool


def secret_hints(lowered: str) -> set[str]:
    """The pre-filter literals in lower-cased text, with the overlapping ones and prefixes."""
    found = set()
    for match in SECRET_HINT.finditer(lowered):
        for inside in range(match.start(), match.end()):  # finditer looks at the first only
            hit = SECRET_HINT.match(lowered, inside)
            if hit:
                found.add(hit.group())
    return {word[:end] for word in found for end in range(1, len(word) + 1) if word[:end] in SECRET_KINDS_OF}


def folded_lower(text: str) -> str:
    """Lower case, with the letters re.IGNORECASE matches to ASCII folded (`ſecret`)."""
    return (text.translate(FOLD_LIKE_IGNORECASE) if LIKE_IGNORECASE.search(text) else text).lower()


def secret_view(text: str, percent: bool = True) -> tuple[str, list[tuple[int, int, int, bool]]]:
    """What the scan reads (see VIEW_CHANGE; `%` escapes as written unless `percent`), and its
    pieces (view start, original start, original end, same length) to tell where a view's span
    stands in the original."""
    changed: list[tuple[str, int, int]] = []  # (view text, original start, original end)
    at = 0
    links = [match.span() for match in LINK.finditer(text)] if "://" in text else []
    for match in VIEW_CHANGE.finditer(text):
        start, run = match.start(), match.group()
        changed.append((text[at:start], at, start))
        if run[0] in "%\\&":  # `%3D`, a JSON or Markdown escape (`\u0022`, `\_`), a reference
            linked = any(a <= start < b for a, b in links)
            changed.append((unescaped(run, percent, linked), start, match.end()))
        elif unicodedata.is_normalized("NFKC", run) and not FORMAT_CHAR.search(run):
            changed.append((run, start, match.end()))
        else:  # letter by letter, to place a finding, but where marks compose with their letters
            # (`か` and `゙`, hangul's jamo: BIP39's lists are written decomposed): the run whole
            letters = [("" if FORMAT_CHAR.match(c) else unicodedata.normalize("NFKC", c),
                        start + n, start + n + 1) for n, c in enumerate(run)]
            whole = unicodedata.normalize("NFKC", FORMAT_CHAR.sub("", run))
            composed = whole != "".join(letter for letter, _, _ in letters)
            changed += [(whole, start, match.end())] if composed else letters
        at = match.end()
    changed.append((text[at:], at, len(text)))
    pieces: list[tuple[int, int, int, bool]] = []
    size = 0
    for piece, first, last in changed:
        if piece:
            pieces.append((size, first, last, len(piece) == last - first))
            size += len(piece)
    return "".join(piece for piece, _, _ in changed), pieces


def unescaped(run: str, percent: bool, linked: bool = False) -> str:
    """The printable ASCII character an escape stands for (VIEW_CHANGE), a JSON escape's or a
    character reference's letter of another script (NFKC) or nothing for its format character,
    or the escape as written (a `%` one unless `percent`, a space's in a link)."""
    if run[0] == "%":
        code = int(run[-2:], 16) if percent else 0
    else:
        char = html.unescape(run) if run[0] == "&" else run[1] if len(run) == 2 \
            else chr(int(run[2:], 16))
        code = ord(char)
        if code > 0x7f and FORMAT_CHAR.match(char):
            return ""
        if code > 0x7f and (char.isprintable() or char.isspace()) and not 0xD800 <= code < 0xE000:
            return unicodedata.normalize("NFKC", char)
    return chr(code) if 0x20 < code < 0x7f or code == 0x20 and not linked else run


def in_original(finding: SecretHit, pieces: list[tuple[int, int, int, bool]]) -> SecretHit:
    """A finding in secret_view's text, placed in the original."""
    starts = [piece[0] for piece in pieces]
    first = pieces[bisect.bisect_right(starts, finding.start) - 1]
    last = pieces[bisect.bisect_right(starts, finding.end - 1) - 1]
    start = first[1] + finding.start - first[0] if first[3] else first[1]
    end = last[1] + finding.end - last[0] if last[3] else last[2]
    return finding._replace(start=start, end=end)


def scan_secrets(text: str, decode: bool = True, viewed: bool = False) -> list[SecretHit]:
    """Credentials in text, in order: the one decision of what every output withholds. Read
    in its normalised view (secret_view), and as written too where a `%` may be its own
    (`viewed`: the view is read)."""
    found: list[SecretHit] = []
    if not viewed and (not text.isascii() or "%" in text or "\\" in text or "&" in text):
        view, pieces = secret_view(text)
        if view != text:
            found = [in_original(f, pieces) for f in scan_secrets(view, decode)]
            if "%" not in text:
                return found
            written, pieces = secret_view(text, percent=False)  # all but its `%` decoded
            if written != text:
                return found + apart([in_original(f, pieces)
                                      for f in scan_secrets(written, decode, True)], found)
    lowered = folded_lower(text)
    found += named_secrets(text, lowered)
    for key in KEY_PHRASE.finditer(text) if "_" in text else ():
        if not SETTING_PIECES & {*key[1].lower().split("_")}:  # ... read as the prose it spells
            end = text.find("\n", key.end())
            end = len(text) if end < 0 else end  # ... to its line's end, or a space past KEY_REACH
            space = SPACE.search(text, key.end() + KEY_REACH, end) if end > key.end() + KEY_REACH \
                else None
            end = space.start() if space else end
            spaced = key.group().replace("_", " ").translate(AS_COLON) + text[key.end():end]
            found += apart([hit._replace(start=hit.start + key.start(), end=hit.end + key.start())
                            for hit in scan_secrets(spaced, decode, True)
                            if hit.kind != RANDOM_KIND], found)  # what it names; random: above
    wallet = bool(WALLET_WORD.search(lowered))
    if text.count(" ") >= 11:  # a phrase's spaces at least
        found += apart(seed_phrases(text, wallet=wallet), found)
    if "\n" in text:  # ... or a phrase a line break wraps (merged with a hit it holds)
        found += wrapped_phrases(text, decode)
    if wallet and LINK_SPACE.search(text):  # ... or its words joined as a link's query joins them
        spaced, pieces = link_spaced(text)
        found += apart([in_original(hit, pieces) for hit in seed_phrases(spaced, named=True)
                        if SEED_KEY.search(spaced, max(0, hit.start - 40), hit.start)], found)
    found += apart([SecretHit("grouped_code", m.start(1), m.end(1), False)
                    for m in CODE_NUMBER.finditer(text) if code_value(m.group(1))
                    and CODE_WORD_BEFORE.search(text, max(0, m.start(1) - 60), m.start(1))], found)
    if "|" in text and PASSWORD_HEADER.search(lowered):
        found += table_passwords(text)
    if "[" in text:  # key material written as its bytes (a Solana keypair's `id.json`)
        found += apart([SecretHit(BYTES_KIND, m.start(), m.end(), False)
                        for m in BYTE_LIST.finditer(text)
                        if random_bytes([int(number) for number in m.group(1).split(",")])], found)
    if "\\x" in text:  # ... or as a literal's escapes; past a name's value that stopped at a
        # quote among them (merged below)
        runs = [(literal_start(text, m.start(), m.group()), m.end())
                for m in BYTE_ESCAPES.finditer(text) if "\\x" in m.group()]
        found += [SecretHit(BYTES_KIND, start, end, False) for start, end in runs
                  if escaped_key(LITERAL_EDGES.sub("", text[start:end]))]
    if len(text) >= RANDOM_MIN:
        wrapped = list(wrapped_tokens(text)) if "\n" in text else []
        excused = [hit for hit, harmless in wrapped if harmless]  # a wrapped checksum's lines
        named, unnamed = set(), []  # values a harmless context names, and the others
        for match in RANDOM_TOKEN.finditer(text):
            if credential_shaped(match.group()) and not overlaps(found, match.start(), match.end()) \
                    and not overlaps(excused, match.start(), match.end()):
                if harmless_context(text, match.start(), match.end(), match.group()):
                    named.add(match.group())
                else:
                    unnamed.append(match)
        for match in unnamed:  # a value named so once is that thing where it repeats (`/w/<id>/`)
            repeated = any(value in match.group()
                           and not credential_shaped(match.group().replace(value, "-"))
                           for value in named)
            if not repeated or SECRECY.search(
                    text, max(0, match.start() - SECRECY_REACH), match.end() + SECRECY_REACH):
                # A documentation's example (AWS's `...bPxRfiCYEXAMPLEKEY`), as for a named kind.
                example = bool(EXAMPLE_SECRET.search(match.group()))
                found.append(SecretHit(RANDOM_KIND, match.start(), match.end(), example))
        for match in DOTTED_TOKEN.finditer(text) if "." in text else ():  # whole, past a finding
            if (dotted_random(match.group()) or memorable(match.group())) \
                    and not harmless_context(text, match.start(), match.end(), match.group(), True):
                found.append(SecretHit(RANDOM_KIND, match.start(), match.end(), False))
        for match in JOINED_TOKEN.finditer(text) if "-" in text or "_" in text else ():
            if memorable(match.group(), match.group(1)) and not overlaps(found, *match.span()) \
                    and not harmless_context(text, match.start(), match.end(), match.group()):
                found.append(SecretHit(RANDOM_KIND, match.start(), match.end(), False))
        signed_runs = list(SIGNED_TOKEN.finditer(text))
        for start, end in (span for signed in signed_runs for span in query_values(signed)):
            if signed_password(REGION_SUFFIX.sub("", text[start:end])) \
                    and not overlaps(found, start, end) \
                    and not harmless_context(text, start, end, text[start:end]):
                found.append(SecretHit(RANDOM_KIND, start, end, False))
        # A credential is withheld whole: a signed run holding a finding is all of it, as a named
        # rule's value may end at a `;` or `!` a generator put inside it (the rest would be a
        # sentence of its own once split there).
        found += whole_runs(signed_runs, found)
        found += [hit for hit, harmless in wrapped if not harmless]
        found += wrapped_urls(text, decode) if "\n" in text and "://" in text else []
        found += wrapped_quotes(text) if "\n" in text else []  # (merged with a hit it holds)
        found += rejoined_keys(text)
    for match in SHORT_TOKEN.finditer(text):
        generated = alternating(match.group()) or mid_generated(match.group())
        if generated and not overlaps(found, match.start(), match.end()) \
                and not harmless_context(text, match.start(), match.end(), match.group()):
            found.append(SecretHit(RANDOM_KIND, match.start(), match.end(), False))
    found += apart(list(policy_passwords(text)), found)
    found += apart(list(chosen_secrets(text, lowered)), found)
    if decode and len(text) >= 24:
        for run in BASE64_RUN.finditer(text):
            inner = base64_text(run.group().strip("_-"))
            if inner and any(not f.kind.startswith("generic") and f.kind != RANDOM_KIND
                             for f in scan_secrets(inner, False)) \
                    and not overlaps(found, run.start(), run.end()):
                found.append(SecretHit("base64_secret", run.start(), run.end(), False))
    # A named kind's marker inside a longer token (`<14 chars>.atlasv1.<67 chars>`): all of it.
    found = [f if f.kind == RANDOM_KIND else f._replace(start=glued_start(text, f.start))
             for f in found]
    if found:  # a finding whose value ends in a public span holds none (a quote may close it)
        spans = [match.span() for match in PUBLIC_SPAN.finditer(text)]
        found = [f for f in found
                 if not any(a < f.end - (text[f.end - 1] in "\"'`") <= b for a, b in spans)]
    if "\n" in text:  # a named value a line break cut: its rest on the next line too
        found = [cut_value(text, f) for f in found]
    merged: list[SecretHit] = []
    for finding in sorted(found, key=lambda f: f.start):
        if merged and finding.start < merged[-1].end:  # an example only if both are
            merged[-1] = merged[-1]._replace(end=max(merged[-1].end, finding.end),
                                             example=merged[-1].example and finding.example)
        else:
            merged.append(finding)
    return merged


def seed_phrases(text: str, named: bool = False, wallet: bool = True) -> list[SecretHit]:
    """Recovery phrases by their form (SEED_RUN) right after a lead (SEED_LEAD), or where a
    `wallet` is named, wherever twelve words start (SEED_LOOK: "type <words> and ..."); `named`
    (under a phrase's name: SEED_KEY), plurals' `s` are a phrase's words too (`cactus`,
    `canvas`); a word after them only under a phrase's name earlier in the sentence (SEED_NAMED),
    a conjunction where a wallet is named, or any after SEED_ALONE words (no sentence runs so long
    without a word BIP39 lacks); where no wallet is named, only so many. In kana, hanzi or
    hangul, by SEED_CJK."""
    if not SEED_LOOK.search(text):
        return []  # (a plain look at twelve words first: most texts hold none)
    hits: dict[tuple[int, int], SecretHit] = {}  # (two leads may open one run: "is: <words>")
    starts = [lead.end() - 1 for lead in SEED_LEAD.finditer(text)]
    if wallet:  # ... or wherever twelve words start
        starts += [look.start() - 1 for look in SEED_LOOK.finditer(text) if look.start()]
    for start in starts:
        m = SEED_RUN.match(text, start)
        if not m or not (credible(m[1], "seed", m[1]) if named else seed_run(m[1])):
            continue
        long = len(seed_words(m[1])) >= SEED_ALONE
        if (wallet or long) and (not m[2] or long or wallet and STOP_AFTER.match(text, m.end(1))
                                 or SEED_NAMED.search(text, max(0, m.start(1) - SEED_REACH),
                                                      m.start(1))):
            hits[m.span(1)] = SecretHit("seed_phrase", m.start(1), m.end(1), False)
    for m in SEED_CJK.finditer(text) if not text.isascii() else ():
        words = m[1].split(" ")
        if wallet or len(words) >= SEED_ALONE:
            hits[m.span(1)] = SecretHit("seed_phrase", m.start(1), m.end(1), False)
    return list(hits.values())


def link_spaced(text: str) -> tuple[str, list[tuple[int, int, int, bool]]]:
    """TEXT with the spaces a link encodes between words (LINK_SPACE) as spaces and its own
    spaces as line breaks (the prose after a link is no word of its phrase), and its pieces
    as secret_view gives them."""
    pieces: list[tuple[int, int, int, bool]] = []
    view: list[str] = []
    size = at = 0
    for match in [*LINK_SPACE.finditer(text), None]:
        start, end = (match.start(), match.end()) if match else (len(text), len(text))
        for piece, first, last in ((text[at:start].replace(" ", "\n"), at, start),
                                   (" " if match else "", start, end)):
            if piece:
                pieces.append((size, first, last, len(piece) == last - first))
                view.append(piece)
                size += len(piece)
        at = end
    return "".join(view), pieces


def wrapped_phrases(text: str, decode: bool) -> list[SecretHit]:
    """What a rule finds across a line break in a phrase (LINE_WRAP) once the text's breaks read as
    what they stand for (break_readings): around a credential's word or twelve words."""
    matches = [m for m in LINE_WRAP.finditer(text)  # (not before a line of its own: a record's key,
               if not text[m.end()].isupper() and not ASSIGNS.match(text, m.end())  # a sentence)
               and m.start() - text.rfind("\n", 0, m.start()) > WRAP_WIDTH]
    if not matches:
        return []
    readings = [break_readings(text[max(0, m.start() - WORD_CUT):m.start()], m.group(),
                               text[m.end():m.end() + WORD_CUT]) for m in matches]
    found, read = unwrapped_hits(text, matches, [first for first, *_ in readings], decode)
    if read and any(len(reading) > 1 for reading in readings):  # ... each way, where one is read
        found += unwrapped_hits(text, matches, [reading[-1] for reading in readings], decode)[0]
    return found


def break_readings(before: str, brk: str, after: str) -> tuple[str, ...]:
    """What a line break with these either side stands for: nothing where it cuts a word (a piece
    of fewer than WORD_CUT letters either side: `sp` / `argere`, `is` / `lupo`, no word of a
    phrase; digits both sides), a space where a blank or a comma is beside it, and else either:
    between two words (`mos` / `quito`, `vivid` / `olive`, `7` / `cor`) or kana, hanzi or hangul
    (a phrase's words there are one to three)."""
    if brk != "\n" or before.endswith(","):
        return (" ",)
    left, right = WORD_END.search(before).group(), WORD_START.match(after).group()
    cjk = CJK_LETTER.match(left[-1]) or CJK_LETTER.match(right[0])
    short = any(len(piece) < WORD_CUT and piece.isalpha() for piece in (left, right))
    return ("",) if not cjk and (short or left.isdigit() and right.isdigit()) else (" ", "")


def unwrapped_hits(text: str, matches: list[re.Match[str]], readings: list[str],
                   decode: bool) -> tuple[list[SecretHit], bool]:
    """What a rule finds across a break once each break (matches) reads as given, in the text
    around a credential's word (PHRASE_NAMED), twelve words (SEED_LOOK) or a key's groups, and
    whether any such text holds a break."""
    view: list[str] = []
    pieces: list[tuple[int, int, int, bool]] = []
    breaks: list[int] = []  # where each break stands in the view
    size = at = 0
    for match, reading in zip(matches, readings):
        for piece, first, last in ((text[at:match.start()], at, match.start()),
                                   (reading, match.start(), match.end())):
            pieces.append((size, first, last, len(piece) == last - first))
            view.append(piece)
            size += len(piece)
        breaks.append(size)
        at = match.end()
    pieces.append((size, at, len(text), True))
    view.append(text[at:])
    spaced = "".join(view)
    lowered = folded_lower(spaced)
    if len(lowered) != len(spaced):  # (a letter lower-cased to two: its names as written)
        lowered = spaced
    near: list[list[int]] = []  # the text a phrase across a break may take: its anchors' places
    for at in breaks:
        start, end = max(0, at - WRAP_AFTER - WRAP_BEFORE), at + WRAP_AFTER + WRAP_BEFORE
        if near and start <= near[-1][1]:
            near[-1][1] = end
        else:
            near.append([start, end])
    anchors = sorted([m.span() for start, end in near for shape, read in
                      ((SEED_LOOK, spaced), (GROUPED, spaced), (PHRASE_NAMED, lowered))
                      for m in shape.finditer(read, start, end)])
    windows: list[list[int]] = []  # the text around each, read once where they overlap
    for start, end in anchors:
        start, end = spaced.rfind(" ", 0, max(0, start - WRAP_BEFORE)) + 1, end + WRAP_AFTER
        if windows and start <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], end)
        else:
            windows.append([start, end])
    found, read = [], False
    for start, end in windows:
        if crosses(breaks, start, end):
            read = True
            found += [in_original(hit._replace(start=start + hit.start, end=start + hit.end),
                                  pieces) for hit in scan_secrets(spaced[start:end], decode)
                      if not hit.example and crosses(breaks, start + hit.start, start + hit.end)]
    return found, read


def crosses(breaks: list[int], start: int, end: int) -> bool:
    """Whether a break (its place, in order) stands inside start..end."""
    at = bisect.bisect_right(breaks, start)
    return at < len(breaks) and breaks[at] < end


def wrapped_urls(text: str, decode: bool) -> list[SecretHit]:
    """Credentials in a link a line break split (`ftp://user:pw` / `@host/path`), found with its
    two lines read as one: a link holds no line break."""
    found = []
    for match in itertools.islice(WRAPPED_URL.finditer(text), WRAP_JOINS):
        brk = match.group().index("\n")
        if match.group()[brk + 1] == "@" and not (OPEN_USERINFO.search(match.group(), 0, brk)
                                                  and HOST_AFTER.match(match.group(), brk + 1)):
            continue  # a mention or a decorator on the next line, or a link whole on its own
        for hit in scan_secrets(match.group().replace("\n", "", 1), decode):
            if hit.kind != RANDOM_KIND:  # a token split so is WRAPPED's, read in its context
                start, end = (match.start() + at + (at >= brk) for at in (hit.start, hit.end))
                found.append(hit._replace(start=start, end=end))
    return found


def rejoined_keys(text: str) -> list[SecretHit]:
    """Keys written in groups or halves (REJOINED), judged joined."""
    found = []
    for shape, joins in REJOINED:
        for match in shape.finditer(text):
            joined = match.group().translate(joins)
            # Letters in groups with few vowels are random letters (an app password's `qzvk mtrw
            # pldx hsoe`, a licence's `DMRQR-HSPML-RRUNE`), not words ("make sure that your"),
            # nor a name's dashed abbreviations (`dflt-rgnl-prmry-bkup`).
            grouped_letters = joined.isalpha() and (" " in match.group() or joined.isupper())
            serial = match.group().count("-") >= 4 and digit_serial(match.group())
            if (credential_shaped(joined) or serial or grouped_letters and few_vowels(joined)
                    and shannon(joined) >= MIN_ENTROPY) \
                    and (shape is PAIRED or key_groups(match.group())) \
                    and not harmless_context(text, match.start(), match.end(), joined):
                found.append(SecretHit(RANDOM_KIND, match.start(), match.end(), False))
    return found


def wrapped_tokens(text: str) -> Iterator[tuple[SecretHit, bool]]:
    """Values a line break split, rejoined: a generated-looking token (WRAPPED, WRAPPED_SIGNED), and
    whether its context makes it harmless (a checksum's two lines); else, after a credential's
    word (WRAP_NAMED), what another rule finds across the break once the two lines read as one
    (a passphrase, a short password). Not two lines of words."""
    plain = ((match, generated) for match in each_break(WRAPPED, text))
    signed = ((match, signed_password) for match in WRAPPED_SIGNED.finditer(text)
              if not WRAPPED.fullmatch(match.group()))
    joins = 0
    for match, judge in itertools.chain(plain, signed):
        left, right = match.group().split("\n")
        named = ALGORITHM_NAMED.search(text, max(0, match.start() - 8), match.start())
        if left.endswith("=") or named and len(left) == DIGEST_HEX[named[1].lower()]:
            continue  # the line ends a value whole: base64's padding, `sha256:` and 64 hex
        brk = match.start() + len(left)
        first, last = text.rfind("\n", 0, brk) + 1, (text + "\n").find("\n", brk + 1)
        before = text[first:brk]
        # Where a word alone (not base32's capitals; not `Heas` of `k+Heas`; not `tezv` of
        # `r00a61.tezv`) ends a line or opens the next, or a record ends (ASSIGNS; not a key's
        # name the break cut), a line ended.
        whole_left = before[len(before.rstrip(TOKEN_CHARS + ".")):]
        ends = [side for side in (whole_left, right) if not TOKEN_PIECES.search(side)]
        padding = len(right) - len(right.rstrip("="))  # base64's, not a key's `=` (`...DA==`)
        split = split_word(left, right)  # a key's name the break cut (`...passwo` / `rd=...`)
        if not split and ASSIGNS.match(text, match.end() - len(right), match.end() - padding
                                       if padding else len(text)) \
                or any(len(piece) > 3 and piece.isalpha() and not piece.isupper()
                       and WORD_PIECE.fullmatch(piece) for piece in ends):
            continue
        joined = left + right
        tail = text[brk + 1:last]  # ... and the next line's: the token's pieces with their dots
        whole_right = tail[:len(tail) - len(tail.lstrip(TOKEN_CHARS + "."))].rstrip(".")
        if not COLUMNS.search(text, first, last) and len(joined) >= RANDOM_MIN \
                and DIGIT.search(joined) and judge(joined):
            harmless = harmless_context(text[:match.start()] + joined + text[match.end():],
                                        match.start(), match.start() + len(joined), joined)
            # A credential is withheld whole: the dotted token the two pieces are part of (a
            # JWT's header and signature), but a checksum only where it stands.
            start, end = match.span()
            if not harmless:
                start, end = min(start, brk - len(whole_left)), max(end, brk + 1 + len(whole_right))
            yield SecretHit(RANDOM_KIND, start, end, False), harmless
            continue
        # The context either side is counted from the value's ends (a JWT's line is long).
        after = text[brk + 1:min(last, brk + 1 + len(whole_right) + WRAP_CONTEXT)]
        if judge is generated and min(len(whole_left), len(whole_right)) >= WRAP_PIECE \
                and joins < WRAP_JOINS and (
                    split or WRAP_NAMED.search(before[-WRAP_CONTEXT - len(whole_left):].lower())
                    or WRAP_NAMED.search(after[len(whole_right):].lower())  # `> ~/.vault_pass`
                    or "." in whole_left + whole_right):  # a dotted token names itself (a JWT)
            joins += 1
            yield from ((hit, False) for hit in read_across(
                text, brk, max(first, brk - len(whole_left) - WRAP_CONTEXT), after))


def read_across(text: str, brk: int, start: int, after: str) -> list[SecretHit]:
    """What a named rule finds across the line break at `brk` once the line from `start` and
    `after`, the next line's text, read as one."""
    return [hit._replace(start=start + hit.start, end=start + hit.end + 1)
            for hit in scan_secrets(text[start:brk] + after)
            if hit.start < brk - start < hit.end and hit.kind != RANDOM_KIND]


def wrapped_quotes(text: str) -> list[SecretHit]:
    """A quoted value a line break split after a credential's word (`BORG_PASSPHRASE='my dog` /
    `ate 3 socks!'`): read across the break (QUOTE_WRAPPED)."""
    found: list[SecretHit] = []
    for match in itertools.islice(QUOTE_WRAPPED.finditer(text), WRAP_JOINS):
        start = max(text.rfind("\n", 0, match.start()) + 1, match.start() - WRAP_CONTEXT)
        if WRAP_NAMED.search(text[start:match.start()].lower()):
            brk = text.index("\n", match.start())
            last = (text + "\n").find("\n", match.end())
            found += read_across(text, brk, start, text[brk + 1:last])
    return found


def generated(token: str) -> bool:
    """Whether a token read alone looks generated: random (credential_shaped), or a key in
    groups (rejoined_keys: `72976-GF7WK-VT664-NVYYH-696X3`)."""
    return credential_shaped(token) or bool(rejoined_keys(token))


def each_break(pattern: Lazy, text: str) -> Iterator[re.Match[str]]:
    """The pattern's matches around each line break, the next searched from the break before
    it: a line that ends one match may open the next (a value's first piece on the line after
    a command's last word: `openssl rand -base64 32` / `<piece>` / `<piece>`)."""
    at = 0
    while match := pattern.search(text, at):
        yield match
        at = match.start() + match.group().index("\n") + 1


def split_word(left: str, right: str) -> bool:
    """Whether a line break cut a credential's word (WRAP_NAMED) in two: the letters that end
    the left piece and open the right one spell it, across the break."""
    tail, head = re.search(r"[A-Za-z]*\Z", left).group(), re.match(r"[A-Za-z]*", right).group()
    spelt = WRAP_NAMED.finditer((tail + head).lower())
    return bool(tail and head) and any(word.start() < len(tail) < word.end() for word in spelt)


def policy_passwords(text: str) -> Iterator[SecretHit]:
    """Passwords made to a policy (policy_password) wherever they stand, but in a link."""
    for match in POLICY_TOKEN.finditer(text):
        start, token = match.start(), match.group()
        if not (token.endswith("!") and RUNS_ON.match(text, match.end())):
            token = token.rstrip(".!?")  # the sentence's end, not a "!" it runs on after
        end = start + len(token)
        in_link = text.rfind("://", 0, start) > max(text.rfind(c, 0, start) for c in " \n\t")
        if not in_link and policy_password(text[start:end]):
            yield SecretHit("policy_password", start, end, False)


def chosen_secrets(text: str, lowered: str) -> Iterator[SecretHit]:
    """Secrets a person chose, never random, known by where they stand (CHOSEN PLACES): a value
    given right after its word, in a clause that names what it opens and nothing else's."""
    for kind, hint, value, names, given, unless in CHOSEN_PLACES:
        if hint is not None and not hint.search(lowered):
            continue
        for match in value.finditer(text):
            start, end = match.span(match.lastindex or 0)
            if not given.search(text, max(0, start - GIVEN_REACH), start):
                continue  # (a giving word holds no clause's end: it stands in the clause)
            line = text.rfind("\n", 0, start) + 1  # a clause ends at a line's end at the latest
            opens = max((m.end() for m in CLAUSE_END_MARK.finditer(text, line, start)),
                        default=line)
            closes = CLAUSE_END_MARK.search(text, end)
            clause = text[opens:closes.start() if closes else len(text)]
            if names.search(clause) and not unless.search(clause):
                yield SecretHit(kind, start, end, False)


def cut_value(text: str, finding: SecretHit) -> SecretHit:
    """A value a named rule found up to a line break (`mysql -pTr7u` / `x_Vq92Lm reports`) runs on
    to the next line's first run, unless that is a word, a list's marker, a key (`USER=`) or
    something of its own (NOT_VALUE_REST): then the line ended the value. A documentation's
    example, shown, is not extended."""
    if finding.kind == RANDOM_KIND or finding.example or not text.startswith("\n", finding.end):
        return finding
    run = NEXT_RUN.match(text, finding.end + 1)
    if not run or ASSIGNS.match(run.group()) or PLAN_LINE.match(run.group() + " ") \
            or NOT_VALUE_REST.match(run.group()) or run.group().rstrip(".,;:!?").isalpha() \
            or not any(c.isalnum() for c in run.group()):
        return finding
    return finding._replace(end=run.end())


def glued_start(text: str, start: int) -> int:
    """Where the token holding a finding starts, when a dot glues a run of digits and both cases
    before it (`KHhxNLZf5i0upy.atlasv1.`): not a name (`config.token`, `DB_PASSWORD`)."""
    glued = GLUED_BEFORE.search(text, max(0, start - 4 * RANDOM_MIN), start)
    run = glued.group() if glued else ""
    return glued.start() if DIGIT.search(run) and run.lower() != run != run.upper() else start


def table_passwords(text: str) -> list[SecretHit]:
    """Cells of a Markdown table's column headed by a password word (`| Env | Password |`), and
    in a column headed as values, the cell after a key naming a password (`| admin_password |`)."""
    found: list[SecretHit] = []
    column, values, at = None, set(), 0
    for line in text.split("\n"):
        cells = line.strip().strip("|").split("|") if line.lstrip().startswith("|") else []
        places = []
        if not cells:
            column = None
        elif column is None:
            heads = [folded_lower(cell.strip()) for cell in cells]
            named = [n for n, head in enumerate(heads) if PASSWORD_HEADER.fullmatch(head)]
            # -1: a header without a password's column, whose rows may still be keyed
            column, values = named[0] if named else -1, {n for n, head in enumerate(heads)
                                                          if VALUE_HEADER.fullmatch(head)}
        elif not all(set(cell.strip()) <= set("-: ") for cell in cells):  # a rule's row
            keyed = [n + 1 for n, cell in enumerate(cells[:-1]) if n + 1 in values
                     and PASSWORD_KEY.fullmatch(folded_lower(cell.strip().strip("`*")))]
            places = [n for n in (column, *keyed[:1]) if 0 <= n < len(cells)]
        for n in places:
            value = cells[n].strip().strip("`\"'")
            words = all(word.isalpha() for word in value.split())  # "in Vault", 无
            if not placeholder(value, False) and not value.startswith("(") and not words \
                    and credible(value, "position" if n == column else "prose", value):
                start = at + line.index("|") + 1 + sum(len(cell) + 1 for cell in cells[:n])
                found.append(SecretHit("password_table", start, start + len(cells[n]), False))
        at += len(line) + 1
    return found


def named_secrets(text: str, lowered: str) -> list[SecretHit]:
    """The named kinds of SECRET_RULES in text, lowered its folded_lower (see scan_secrets)."""
    found: list[SecretHit] = []
    admitted = {i for literal in secret_hints(lowered) for i in SECRET_KINDS_OF[literal]}
    same_places = len(lowered) == len(text)
    for index in sorted(admitted):
        kind, _, source, check = SECRET_RULES[index]
        # A (?i) rule reads the lower-cased text, unless lower-casing moved the places.
        folded = source.startswith("(?i)") and same_places
        pattern = SECRET_PATTERNS[index][folded]
        target = lowered if folded else text
        match = pattern.search(target)
        while match:
            group = next((g for g in range(1, match.re.groups + 1) if match.start(g) >= 0), 0)
            value = text[match.start(group):match.end(group)].strip("\"'`\\")
            before = text[max(0, match.start(group) - 2):match.start(group)]
            quoted = before[-1:] in ("\"", "'", "`") and before[:1] != ":"  # psql's :'var' names
            # A webhook's value is a URL's path, which place-holders' forms hold (see credible).
            if group and check != "hook" and placeholder(value, quoted) or FILLER.search(value) \
                    or MASKED.match(text, match.end(group)) \
                    or not credible(value, check, text[match.start():match.end()]) \
                    or check == "random" \
                    and harmless_context(text, match.start(group), match.end(group), value) \
                    or in_template(text, match.start(), prose=check in ("prose", "given")):
                # Not this one; a match starting inside it may be (`key: NAME_TOKEN=value`).
                match = pattern.search(target, match.start() + 1)
                continue
            overlaps = [f for f in found if f.start < match.end() and match.start() < f.end]
            if overlaps and overlaps[0].start <= match.start() and overlaps[0].end < match.end():
                hit = overlaps[0]  # the first rule names the kind; what runs on past it goes too
                found[found.index(hit)] = hit._replace(end=match.end())
            elif not overlaps:
                found.append(SecretHit(kind, match.start(), match.end(), bool(EXAMPLE_SECRET.search(value))))
            match = pattern.search(target, match.end())
    return found


def in_template(text: str, at: int, prose: bool) -> bool:
    """Whether text at `at` is inside a template's expression (`{{ lookup(...) }}`, `${X:?msg}`):
    code, whose words name no value. To all but the prose rules, `${PW:-pw}` holds one."""
    openers = ("{{", "${") if prose else ("{{",)
    return any(text.rfind(opener, 0, at) > text.rfind("}", 0, at) for opener in openers)


def placeholder(value: str, quoted: bool) -> bool:
    """Whether a rule's value stands in for one (PLACEHOLDER): one opening with a letter is a value
    when the rest looks generated (`myQ8zr4...`) with no path or bracket; code may close its call
    after it (`password=cfg.pw)`); quoted, `dragon_storm_kiwi` is a string, no variable."""
    value = value.rstrip(")];,")
    value = value[:-1] if value.endswith(".") and not value.endswith("..") else value  # a stop
    return bool(PLACEHOLDER.match(value)) \
        and not (value[:1].isalpha() and not {"/", "<"} & set(value) and looks_random(value)) \
        and not (quoted and SNAKE_WORDS.fullmatch(value))


def credible(value: str, check: str, whole: str) -> bool:
    """Whether a rule's value passes its check (see SECRET_RULES)."""
    if PUBLIC_VALUE.match(value):
        return False
    decoded = base64_text(value) if len(value) >= RANDOM_MIN else None
    if decoded and decoded[:1] in "{[" and not scan_secrets(decoded, False):
        return False  # JSON in base64 that holds no credential
    if check == "random":
        return credential_shaped(value) or long_number(value)
    if check == "words":  # not words naming a password, nor an adjective or a participle first
        return not NAMED_PASSWORD.search(value) and not DESCRIBING_END.search(value.split()[0])
    if check == "diceware":  # not words that tell of a password ("is rotated every ninety
        # days"): the first, or two, a word prose needs (PROSE_WORD), a participle or an adverb
        telling = [bool(PROSE_WORD.fullmatch(word)) or word.endswith(("ed", "ly"))
                   for word in value.split()]  # in small letters (a noun's capital: German prose)
        return credible(value, "seed", whole) and not telling[0] and sum(telling) < 2 \
            and value == value.lower()
    if check == "seed":  # BIP39's and diceware's words of three letters are few: a run of them
        words = re.findall(_SEED_LETTER + "+", value.lower())  # is code's (`mov add sub mul`)
        return 3 * sum(len(word) == 3 for word in words) <= len(words)
    if check == "letters":
        return random_letters(value)
    if check == "made":  # eight or more: both cases and a digit, or a letter, a digit and a sign
        return len(value) >= 8 and (cased_with_digit(value)
                                    or bool(CHOSEN_PASSWORD.fullmatch(value)))
    if check == "body":
        return bool(KEY_LINE.search(value))
    if check == "query":  # a query's value its name calls a credential: not a setting's words
        return not SETTING_WORDS.fullmatch(value.rstrip(".,;:!?)"))
    if check == "hook":  # the URL's path is its value: no place-holder's form, no example's host
        return hook_secret(whole)
    if check == "basic":  # base64 of `user:password`, or a value that looks generated
        return ":" in (base64_text(value) or "") or looks_random(value)
    before = whole[:whole.rfind(value)][-1:]  # a space, a quote, or the flag it is glued to
    if check == "position":  # the place says password: any value, but a word of prose after a space
        spaced = before.isspace()  # quoted, it is a value; glued to its flag (`-pX`), no setting
        word, setting = value.rstrip(".,;:!?)"), value.partition("=")[0]  # `id=npmrc,src=...`
        return len(value) >= 3 and not (spaced and word.isalpha() and word.islower()
                                        and not chosen_word(word)) \
            and not ("=" in value and len(setting) > 1 and setting.isalpha() and setting.islower()
                     and not before.isalnum())
    # ... a thing's name the "given" check lets through, but for the stop after it (`with Node20.`);
    # in quotes a `!` or `?` is the value's own (`'Okta2024.'` is a name, `'Bonjour2024!'` none)
    quoted = before != "" and before in "\"'`“‘"
    if check == "given" and NAMED_THING.fullmatch(value.rstrip(".,;:)" if quoted else ".,;:!?)")):
        return False
    if check in ("prose", "given"):  # a digit, sign or inner capital; no adjective (`SHA-hashed`)
        if value.endswith(":") and value[:-1].replace("_", "").isalnum():
            return False  # a key's name before its value (`POSTGRES_PASSWORD: ${DB_PASSWORD}`)
        if " " in value and command_line(value):
            return False  # a command (`ssh-add --apple-use-keychain`), not its passphrase
        if PASSPHRASE.fullmatch(value.lower().rstrip(".,;:!?)")):
            # three words joined: a passphrase (`correct-horse-battery`), not the name of what
            # holds one (a Kubernetes secret's: `existingSecret: app-postgresql-credentials`)
            words = value.lower().split("-")
            return not any(word.removesuffix("s") in SECRET_WORDS for word in words)
        value = value.rstrip(".,;:!?)]}")
        if REGEX_SYNTAX.search(value):
            return False  # a pattern a password's rule is written in (`^(?=.*[A-Z])...`)
        if HOST_PORT.fullmatch(value):
            return False  # where a service listens (`localhost:5432`), not a password
        setting, _, number = value.lstrip("([{").partition("=")
        if number and SETTING_NUMBER.fullmatch(number) and SETTING_NAME.fullmatch(setting):
            return False  # a setting's number (`(PASSWORD_RESET_TIMEOUT=1800)`), not `Admin=1234`
        name = value.partition("=")[0].replace("_", "") if "=" in value else ""
        if set(value) & set("!#$%&*^~(;") and signed_random(value):
            return True  # generated, with a sign no path holds (`XaAF/TM-X4BTd(RE&;dy`)
        if len(name) > 2 and name.isalpha() and name.islower() or "/" in value:
            return False  # a setting (`minlength=12`), a path or a link
        last = value.rpartition("-")[2]
        acronym = value.isupper() and value.replace("-", "").isalnum()  # `PBKDF2`, `SHA-256`
        if "-" in value and last.isalpha() and last.islower() and last.endswith("ed") or acronym:
            return False
        inner = any(a.islower() and b.isupper() for a, b in zip(value, value[1:]))
        given = chosen_word(value) and bool(CHOSEN_WORD_GIVEN.search(whole, 0, whole.rfind(value))
                                            or whole.startswith(value))  # ... before its word
        return inner and not value.istitle() or given or any(
            c.isdigit() or not (c.isalpha() or c in "-.,") for c in value)
    if check == "phrase":
        verdict = quoted_verdict(value, whole)
        if verdict is not None:
            return verdict
    # Text about a password, or a file's path (`私钥: ~/.ssh/id_ed25519`).
    if check == "password" and (about_a_password(value) or FILE_PATH.match(value)):
        return False
    if check in ("password", "phrase"):  # a chosen password after its word may repeat itself
        # ... and so does one with capitals, small letters, a digit and a sign, as a policy asks
        # (`Harbor0-Harbor`), not an identifier (`AppState2`)
        policy = cased_with_digit(value) and not value.isalnum()
        named = bool(PASSWORD_WORD.search(whole) or CHOSEN_PASSWORD.fullmatch(value) or policy)
        digit = any(c.isdigit() for c in value)
        return (drawn_entropy(value) or long_number(value)
                or named and digit and value.isascii()) and (
            digit or named or not value.isascii() or drawn_letters(value))
    return True


def quoted_verdict(value: str, whole: str) -> bool | None:
    """The "phrase" check where the quote settles it: no value (False), a passphrase (True), or
    None, to be judged as a password is."""
    spaced = " " in value.strip()
    if spaced and not PHRASE_JOIN.search(whole[:whole.rfind(value)].rstrip(" \"'`“„«")):
        return False  # words the clause does not give as its value ("must contain « ... »")
    words_only = all(c.isalpha() or c in " .,;:!?-" for c in value)
    if spaced and words_only and value[:1].isupper() \
            or NAMED_PASSWORD.search(value) or not spaced and about_a_password(value) \
            or spaced and command_line(value):
        return False  # a label, a message, words naming a password, a field, a command
    if PASSPHRASE.fullmatch(value.rstrip(".!")) and not PASSWORD_WORD.search(value):
        # words in small letters, as passphrases are made, that the word's clause gives as its
        # value ("the passphrase is '...'", "Kennwort „...“"), not a secret's
        return not whole.lower().startswith("secret")
    if whole.lower().startswith("secret") and RESOURCE_NAME.fullmatch(value):
        return False  # a Kubernetes secret's name (`secret "db-credentials" not found`)
    return None


def command_line(value: str) -> bool:
    """Whether words read as a command line: two options, or one and a path."""
    options = COMMAND_OPTION.findall(value)
    return len(options) >= 2 or bool(options) and "/" in value


def about_a_password(value: str) -> bool:
    """Whether a value assigned to a password's name is text about one: a message (MESSAGE, or
    words naming a password: "Enter your password") or a field's name (`current-password`)."""
    parts = NAME_PARTS.split(value)
    return bool(MESSAGE.fullmatch(value.strip()) or " " in value and PASSWORD_WORD.search(value)) \
        or len(parts) > 1 and all(part.isalpha() for part in parts) \
        and any(part.lower() in PASSWORD_PARTS for part in parts)


def looks_random(value: str, words: bool = False, least: int = RANDOM_MIN,
                 joined: bool = False) -> bool:
    """A generated token, not a name; `words` (no keyword backs it) lets `getUserByIdV2` pass;
    `joined`, a run joined from pieces or signs, has no ODD_SHORT allowance."""
    hexed = HEX.fullmatch(value)
    if len(value) < least or shannon(value) < (HEX_ENTROPY if hexed else MIN_ENTROPY):
        return False
    if not any(c.isalpha() for c in value):
        return False
    if not any(c.isdigit() for c in value):  # letters only: pieces no word is, pairs words lack
        if not words:
            return False
        mixed, odd = value.lower() != value != value.upper(), odd_pieces(value)
        paired = not joined and rare_pairs(value) and len(CONSONANT_TRIPLE.findall(value)) > 1 \
            and not alphabet(value)
        return mixed and odd > ODD_PIECES or paired and (not mixed or odd >= ODD_PIECES - 1)
    if hexed:
        return True  # a run of 16 hex characters or more is a hash, an id or a key, not a word
    if not any(c.isupper() for c in value):  # one case: digits between letters, or odd letters
        inner, odd = len(INNER_DIGITS.findall(value)), CONSONANT_RUN.search(value)
        if inner >= INNER_DIGIT_RUNS or inner == INNER_DIGIT_RUNS - 1 and odd:
            return True
    if class_changes(value, words) * RANDOM_MIX >= len(value):
        return True
    if not words:
        return False
    letters = sum(map(str.isalpha, value))  # in one case and mostly letters: judged by its vowels
    one_case = value.islower() or value.isupper()
    return one_case and 2 * letters >= len(value) and few_vowels(value) \
        or odd_pieces(value) >= ODD_PIECES or one_case and not joined and rare_pairs(value) \
        or not joined and len(value) <= ODD_SHORT and odd_pieces(value, True) >= ODD_PIECES - 1


def key_groups(value: str) -> bool:
    """Whether groups (GROUPED) read as a key's: base32's spaced ones always; dashed ones where
    every group but one (two of five: a prefix) holds a digit, or capitals no word has where two
    groups or more do (`RVDC-QNZW`); not a name's words (`gpt2-base-fp16-onnx`)."""
    groups = value.replace("-", " ").replace(".", " ").split()
    letters = [g for g in groups if len(g) >= 4 and not DIGIT.search(g)]
    odd = [g for g in letters if g.isupper() and ODD_GROUP.search(g)]
    wordy = len(letters) - (len(odd) if len(odd) >= 2 else 0)  # one is an acronym (`onnx`)
    # Four capital groups of five, a digit among them: a key's (`765AF-XIRCN-ZVDV4-CEKOH`).
    uniform = len(groups) >= 4 and {len(g) for g in groups} == {5} and value.isupper() \
        and bool(DIGIT.search(value))
    spaced = "-" not in value and "." not in value
    return spaced or uniform or wordy <= 1 + (len(groups) >= 5)  # five: a vendor's prefix


def rare_pairs(value: str) -> bool:
    """Whether the letters of a name's words pair as words do not (COMMON_PAIRS): RARE_SHARE of
    the pairs inside its pieces, RARE_LEAST or more, of RARE_PAIRS or more, with under RARE_VOWELS
    of its letters vowels (pinyin pairs rarely too, but is rich in vowels)."""
    pairs = [piece[i:i + 2].lower() for piece in (m[0] for m in NAME_PIECE.finditer(value))
             for i in range(len(piece) - 1)]
    rare = sum(pair not in COMMON_PAIRS for pair in pairs)
    return len(pairs) >= RARE_PAIRS and rare >= max(RARE_LEAST, RARE_SHARE * len(pairs)) \
        and few_vowels(value, RARE_VOWELS)


def long_number(value: str) -> bool:
    """Digits a credential's word names, longer than an id's or a card's (NAMED_DIGITS), their
    entropy judged as hex's (ten digits hold 3.3 bits a character at most; `tokens=5976238`, a
    count, is short)."""
    return value.isdigit() and len(value) >= NAMED_DIGITS and shannon(value) >= HEX_ENTROPY


def random_bytes(numbers: list[int], share: float = BYTES_DISTINCT) -> bool:
    """Whether numbers (a BYTE_LIST's, an escaped literal's) read as drawn bytes: each under 256,
    as many different as `share` of what drawn bytes of that count hold, neither rising nor
    falling throughout."""
    ordered = numbers == sorted(numbers) or numbers == sorted(numbers, reverse=True)
    drawn = 256 * (1 - (255 / 256) ** len(numbers))  # how many different values drawn bytes hold
    return max(numbers) < 256 and len(set(numbers)) >= share * drawn and not ordered


def literal_start(text: str, at: int, run: str) -> int:
    """Where a BYTE_ESCAPES run's literal opens: at the first opening quote (and `b`) before its
    first escape that no quote of its kind closes there (a quote of the other kind inside, or an
    escaped one, is a byte: `b"e%'\\x13..."`, `b'A\\'}...'`), or else at the word holding that
    escape, not at the words or names before it."""
    head = run[:run.find("\\x")]
    openings = [match.start() for match in OPENING_QUOTE.finditer(head)
                if head[match.end() - 2:match.end() - 1] != "\\"  # an escaped quote is a byte
                and not re.search(r"(?<!\\)" + head[match.end() - 1], head[match.end():])]
    return at + (openings[0] if openings else head.rfind(" ") + 1)


def escaped_key(run: str) -> bool:
    """Whether a BYTE_ESCAPES run holds drawn bytes: ESCAPED_BYTES or more, no UTF-8 text, read
    as random_bytes, and a quarter escaped or under half letters (Latin-1 text is mostly letters,
    drawn bytes a fifth)."""
    raw = bytes(int(hexed, 16) if hexed else ord(ESCAPED_CHARS.get(escaped, escaped) or char) % 256
                for hexed, escaped, char in BYTE_ESCAPE.findall(run))
    letters = sum(chr(byte).isascii() and chr(byte).isalpha() for byte in raw)
    if len(raw) < ESCAPED_BYTES or run.count("\\") * 4 < len(raw) and letters * 2 >= len(raw):
        return False
    try:
        raw.decode("utf-8")
        return False  # text written as its bytes ("\\xe4\\xbd\\xa0...": Chinese)
    except UnicodeDecodeError:
        return random_bytes(list(raw), ESCAPED_DISTINCT)


def few_vowels(value: str, share: float = VOWEL_SHARE) -> bool:
    """Random letters have fewer vowels than words: under `share` of its letters."""
    return sum(c in "aeiouAEIOU" for c in value) < share * sum(map(str.isalpha, value))


def drawn_letters(value: str) -> bool:
    """Letters alone that no words make, as a credential's after its key's name: four groups or
    more of one length (an app password's `mveg-pdij-dgxk-rkvm`; not a key's name, `sb-<id>-auth-
    token`, nor `prod-sync-http`), or one run in one case as long as a token, with few vowels and
    two CONSONANT_TRIPLEs (not `synchronization`, nor the alphabet, a stand-in)."""
    groups = re.split(r"[\s-]+", value.rstrip(".,;:!?)]}"))
    letters = "".join(groups)
    if not letters.isalpha():
        return False
    if len(groups) > 1:
        return len(groups) >= 4 and len(groups[0]) >= 4 and len(set(map(len, groups))) == 1 \
            and random_letters(" ".join(groups))
    return len(letters) >= RANDOM_MIN and (letters.islower() or letters.isupper()) \
        and few_vowels(letters) and len(CONSONANT_TRIPLE.findall(letters)) > 1 \
        and not alphabet(letters)


def alphabet(letters: str) -> bool:
    """Whether letters step along the alphabet or a keyboard's rows (LETTER_RUNS), either way,
    half of their pairs or more: a stand-in (`abcd`, `TRAIN-ABCD-EFGH-IJKL`, `qwertyuiop`)."""
    pairs = [letters[at:at + 2].lower() for at in range(len(letters) - 1)]
    return 2 * sum(any(pair in run for run in LETTER_RUNS) for pair in pairs) >= len(pairs)


def random_letters(value: str) -> bool:
    """Groups of letters no words make: few vowels, or two groups with no vowel or with three
    consonants in a row (`y` one too) but for a plural's `s` (`cpfu yaxv lsnn upim`, `akay jwni rycs
    euih`; not `sent over http from`, 1 in 35 runs of four words of four letters)."""
    groups = re.split(r"[\s-]+", value)
    if all(alphabet(group) for group in groups):
        return False  # the alphabet in order is a place-holder (`abcd efgh ijkl mnop`)
    odd = sum(bool(ODD_GROUP.search(group.rstrip("sS"))) for group in groups)
    return few_vowels(value) or odd >= 2


def odd_pieces(value: str, short: bool = False) -> int:
    """How many of a name's pieces are no word's (see ODD_PIECE), and its rare letters; `short`
    (ODD_SHORT's count) takes a capital and a vowel for a short word (`By`, `Id`, `Or`)."""
    odd = sum(1 for m in NAME_PIECE.finditer(value) if not m.group(1) and ODD_PIECE.fullmatch(m[0])
              and not (short and len(m[0]) == 2 and m[0][0].isupper() and m[0][1] in "aeiouy"))
    return odd + len(RARE_LETTER.findall(value))


def chosen_word(value: str) -> bool:
    """A long word in small letters that no description ends as (CHOSEN_WORD)."""
    return len(value) >= CHOSEN_WORD and value.isalpha() and value.islower() \
        and value.isascii() and not DESCRIBING_END.search(value) and not PASSWORD_WORD.search(value)


def cased_with_digit(value: str) -> bool:
    """Capitals, small letters and a digit, as a password policy asks."""
    return any(c.isupper() for c in value) and any(c.islower() for c in value) \
        and any(c.isdigit() for c in value)


def policy_password(token: str) -> bool:
    """Whether a token (POLICY_TOKEN) is made as a password policy asks, a sign inside."""
    signed = bool(POLICY_SIGN.search(token)) or token[-1] == "!"
    return signed and cased_with_digit(token) and not POLICY_NOT.fullmatch(token) \
        and not FILLER.search(token)


def mid_generated(token: str) -> bool:
    """Whether MID_MIN to RANDOM_MIN letters and digits written whole, two capitals, two small
    letters and a digit, read as no name: ODD_PIECES pieces no word, as a long token's; not a
    drawing's path nor base64 of text (`Ym9vdHN0cmFw`)."""
    return MID_MIN <= len(token) < RANDOM_MIN and token.isalnum() and cased_twice(token) \
        and DIGIT.search(token) is not None \
        and shannon(token) >= MIN_ENTROPY and odd_pieces(token, True) >= ODD_PIECES \
        and not PUBLIC_VALUE.match(token) and not SVG_PATH.fullmatch(token) \
        and base64_text(token) is None


def dotted_random(token: str) -> bool:
    """Whether a token a dot joins (DOTTED_TOKEN) is generated: its pieces rejoined judged as a
    token written whole, where words of three letters or more and numbers are a third of it or
    less; not a file's or host's name (FILE_END), a selector (DOTTED_NAMED), a drawing's path."""
    core = SIGNS.sub("", token)
    if len(core) < MID_MIN or FILE_END.search(token) or SVG_PATH.fullmatch(core) \
            or DOTTED_NAMED.match(token):
        return False
    words = sum(len(word) for word in OWN_WORDS.split(token)
                if len(word) >= 3 and WORD_PIECE.fullmatch(word) or word.isdigit())
    return 3 * words <= len(core) and (credential_shaped(core) if len(core) >= RANDOM_MIN
                                       else mid_generated(core))


def memorable(token: str, sign: str = ".") -> bool:
    """Whether a token one sign joins (DOTTED_TOKEN, JOINED_TOKEN) is words and a number made as
    a password: three words (MEMORABLE_WORD) or more, one with a capital opening it, and a number
    (MEMORABLE_NUMBER; with a hyphen or an underscore, MEMORABLE_GLUED past the first word),
    nothing else; not a file's name, its extension four letters of one case at most
    (`Invoice.March.1042.docx`, `Scan.Front.0042.PDF`)."""
    pieces = token.split(sign)
    words = sum(1 for piece in pieces if MEMORABLE_WORD.fullmatch(piece))
    if sign != ".":
        glued = sum(1 for piece in pieces[1:] if MEMORABLE_GLUED.fullmatch(piece))
        return words >= 2 and glued == 1 and words + glued == len(pieces) \
            and any(piece.istitle() for piece in pieces)
    numbers = sum(1 for piece in pieces if MEMORABLE_NUMBER.fullmatch(piece))
    extension = len(pieces[-1]) <= 4 and (pieces[-1].islower() or pieces[-1].isupper())
    return words >= 3 and numbers >= 1 and words + numbers == len(pieces) \
        and any(piece.istitle() for piece in pieces) and not extension


def alternating(token: str) -> bool:
    """Whether a short token (SHORT_TOKEN) is generated: its letters and digits alternate."""
    core = SIGNS.sub("", token)
    runs_short = all(len(run) <= (SHORT_DIGITS if run[0].isdigit() else SHORT_LETTERS)
                     for run in CLASS_TURN.split(core))
    return SHORT_MIN <= len(core) < RANDOM_MIN and runs_short \
        and 2 * class_changes(core) >= len(core) and shannon(core) >= SHORT_ENTROPY \
        and cased_twice(core) and not PUBLIC_VALUE.match(token) and not SVG_PATH.fullmatch(token)


def cased_twice(value: str) -> bool:
    """Two capitals and two small letters or more: a generator's mix, not one capital's name."""
    return sum(map(str.isupper, value)) > 1 < sum(map(str.islower, value))


def class_changes(value: str, words: bool = False) -> int:
    """Where the kind of character changes; an upper-case letter before lower-case ones opens a
    word (`CamelCase`): no change; with `words`, neither does a word's capital after a lower-case
    letter or a digit (`S3Bucket`)."""
    return sum(1 for at, (a, b) in enumerate(zip(value, value[1:]))
               if _char_class(a) != _char_class(b) and not (a.isupper() and b.islower())
               and not (words and not a.isupper() and b.isupper()
                        and CAPITAL_WORD.match(value, at + 1)))


def query_values(match: re.Match[str]) -> Iterator[tuple[int, int]]:
    """The spans of a signed run to judge: the whole run, and where it holds a query (`a=V&b=W`;
    its `&b=` reads as markup) what stands before its first name and each value."""
    yield match.span()
    names = list(QUERY_KEY.finditer(match.group()))
    if not names:
        return
    starts = [0] + [name.end() for name in names]
    ends = [name.start() for name in names] + [len(match.group())]
    yield from ((match.start() + start, match.start() + end)
                for start, end in zip(starts, ends) if start < end)


def signed_password(token: str) -> bool:
    """Whether a token in SIGNED_TOKEN's shape is a generated password: no piece between its
    signs a RANDOM_TOKEN, its letters and digits random, no escape nor file name, no format
    but beside a generator's other signs (`8%d$2LG`), no filler; joined by
    brackets alone (code's too), both cases and a digit, no markup and no name (named_pair)."""
    joins_only = not any(sign in token for sign in _SIGNED_SIGNS)
    return bool(SIGNED_TOKEN.fullmatch(token)) \
        and max(map(len, SIGNS.split(token))) < RANDOM_MIN and signed_random(token) \
        and not PERCENT_ESCAPE.search(token) \
        and not TILDE_FILE.search(token) \
        and not (PRINTF_SPEC.search(token) and not set(token) & set(_SIGNED_SIGNS) - {"%"}) \
        and not FILLER.search(token) \
        and not TOKEN_PATTERN.fullmatch(token) \
        and not (joins_only and (MARKUP.search(token) or not cased_with_digit(token)
                                 or named_pair(token)))


def named_pair(token: str) -> bool:
    """Whether one bracket joins two parts and one is a name, its pieces words (`(short)0x7FFF`,
    `[u8;SHA256_LEN]`): code's, as a password's random parts are not."""
    parts = [part for part in BRACKET_RUN.split(token) if part]
    return len(parts) == 2 and any(all(map(WORD_PIECE.fullmatch, SIGNS.split(part.strip("._-"))))
                                   for part in parts)


def signed_random(value: str) -> bool:
    """Whether a signed value (SIGNED_TOKEN) is generated: its letters and digits read as a name."""
    return looks_random(SIGNS.sub("", value), words=True, least=SIGNED_MIN, joined=True)


def whole_runs(runs: list[re.Match[str]], found: list[SecretHit]) -> list[SecretHit]:
    """Each run holding a finding, as a finding of the first one's kind (a value withheld whole)."""
    hits = []
    for run in runs:
        inside = [f for f in found if f.start < run.end() and run.start() < f.end]
        if inside:
            hits.append(SecretHit(inside[0].kind, run.start(), run.end(), inside[0].example))
    return hits


def overlaps(found: list[SecretHit], start: int, end: int) -> bool:
    return any(f.start < end and start < f.end for f in found)


def code_value(value: str) -> bool:
    """Whether a value after a code's word (CODE_NUMBER) is a code's: digits in groups of one
    length, or groups mixing letters and digits as random ones do (mixed_groups)."""
    groups = value.split("-")
    if value.replace("-", "").isdigit():
        return len({len(group) for group in groups}) == 1
    return mixed_groups(value)


def digit_serial(value: str) -> bool:
    """Whether dashed groups of digits, a vendor's letters before them, are a serial's: none a
    year, a counter's (`0007`) or a round number (`2000`), as in a lot's or a step's number."""
    groups = value.split("-")
    digits = groups[1:] if groups[0].isalpha() else groups
    return all(group.isdigit() and not re.fullmatch(_YEAR, group) and not group.startswith("00")
               and not group.endswith("00") for group in digits)


def mixed_groups(value: str) -> bool:
    """Whether dashed groups change between letters and digits twice or more in half of them,
    with a letter past hex's (not code points' `02BD-02C5`)."""
    groups = value.split("-")
    changing = sum(len(re.findall(r"[A-Za-z]+|\d+", group)) >= 3 for group in groups)
    return bool(re.search("[g-zG-Z]", value)) and 2 * changing >= len(groups)


def seed_run(value: str) -> bool:
    """Whether words unnamed read as a recovery phrase (SEED_RUN): few of three letters, as
    `credible` asks of a named one, and a plural's `s` on at most one word in ten, one of twelve
    (29 of BIP39's 2,048 words end so; a list of tables or a sentence's verbs and nouns end so
    more often), and not twelve in alphabetical order."""
    words = seed_words(value)
    ordered = 1  # the words in alphabetical order so far: twelve are a word list's, not a phrase's
    for a, b in zip(words, words[1:]):
        ordered = ordered + 1 if a < b else 1
        if ordered == 12:
            return False
    return credible(value, "seed", value) \
        and sum(word.endswith("s") and not word.endswith("ss") for word in words) \
        <= max(1, len(words) // 10)


def seed_words(value: str) -> list[str]:
    """A phrase's words, without commas or a list's numbers."""
    return [word for word in value.replace(",", " ").split() if not word[0].isdigit()]


def apart(hits: list[SecretHit], found: list[SecretHit]) -> list[SecretHit]:
    """The hits that overlap none found (overlaps, for many): one pass over the hits by their
    end and the spans by their start."""
    spans = sorted((f.start, f.end) for f in found)
    kept, at, reach = [], 0, -1  # reach: the furthest end of the spans starting before a hit's end
    for hit in sorted(hits, key=lambda h: h.end):
        while at < len(spans) and spans[at][0] < hit.end:
            reach = max(reach, spans[at][1])
            at += 1
        if reach <= hit.start:
            kept.append(hit)
    return kept


def credential_shaped(token: str) -> bool:
    """Whether one RANDOM_TOKEN token looks generated (see TOKEN_PIECES)."""
    if PUBLIC_VALUE.match(token.lstrip("/")) or DIGEST_LABEL.match(token) or public_key(token):
        return False  # public by its form, a digest named by its label
    if not UUID.search(token):
        pieces = TOKEN_PIECES.split(token)
        if not any(len(piece) >= RANDOM_MIN and looks_random(piece, words=True) for piece in pieces):
            # Pieces next to each other that are neither a word nor a number, joined; and all
            # pieces when one mixes cases (base64 breaks anywhere, a name between its words), from
            # NAME_REST where one piece at most is a word or a number: a token of 16 may hold fewer
            # letters and digits (`Y7Kp_E_YhZxdkkVq`; not `all-MiniLM-L6-v2`).
            worded = [piece.isdigit() or bool(WORD_PIECE.fullmatch(piece)) for piece in pieces]
            runs = "".join(" " if word else piece for piece, word in zip(pieces, worded)).split()
            whole, least = "".join(pieces), NAME_REST if sum(worded) < 2 else RANDOM_MIN
            if len(whole) >= least and any(run.lower() != run != run.upper() for run in runs):
                runs.append(whole)
            judged = [looks_random(run, True, RANDOM_MIN if HEX.fullmatch(run) else NAME_REST,
                                   joined=True) for run in runs]
            # ... and a part whole where a `+` stands in both cases' letters and digits: base64's
            # sign, not one joining names (`postgresql+psycopg2`).
            parts = BASE64_PLUS.findall(token) if "+" in token else []
            judged += [looks_random(part.replace("+", ""), True, NAME_REST)
                       for part in parts if part.lower() != part != part.upper()]
            if len(pieces) == 1 or not any(judged):
                return False
    # Text in base64 (after a cookie's `name=`) is judged by the text: `user:pw`, or a credential.
    decoded = base64_text(COOKIE_NAME.sub("", token, 1))
    return decoded is None or bool(scan_secrets(decoded, False)) \
        or bool(USER_PASSWORD.fullmatch(decoded)) and not TYPED_ID.fullmatch(decoded)


def stamped_year(token: str) -> float:
    """The year a time-ordered id's first 48 bits name (milliseconds since 1970): a ULID's first
    ten characters (Crockford base32), a UUIDv7's first twelve hex digits; 0 for other tokens."""
    if ULID.fullmatch(token):
        return 1970 + int(token[:10].translate(CROCKFORD_DIGITS), 32) / 31_556_952_000
    if UUID7.fullmatch(token):
        return 1970 + int(token[:8] + token[9:13], 16) / 31_556_952_000
    return 0


def ksuid_year(token: str) -> float:
    """The year a KSUID's first 32 bits name (seconds since its epoch); 0 for other tokens."""
    if not KSUID.fullmatch(token):
        return 0
    value = 0
    for char in token:
        value = value * 62 + BASE62.index(char)
    return 0 if value >> 160 else 1970 + ((value >> 128) + KSUID_EPOCH) / 31_556_952


def public_key(token: str) -> bool:
    """Whether a base64 run opens a public key's DER (SubjectPublicKeyInfo: a sequence of the
    algorithm's sequence, then a bit string): a private key holds a version number or an octet
    string there."""
    try:
        head = token[:PUBLIC_KEY_HEAD]
        der = base64.b64decode(head[:len(head) // 4 * 4], validate=True)
    except (binascii.Error, ValueError):
        return False
    outer = der_element(der, 0, 0x30)
    algorithm = der_element(der, outer[0], 0x30) if outer else None
    return bool(algorithm) and der[sum(algorithm):sum(algorithm) + 1] == b"\x03"


def der_element(der: bytes, at: int, tag: int) -> tuple[int, int] | None:
    """(where its content starts, its length) of the DER element at `at` if it has `tag`."""
    if der[at:at + 1] != bytes([tag]) or at + 2 > len(der):
        return None
    size = der[at + 1]
    if size < 0x80:
        return at + 2, size
    count = size & 0x7F
    if not 1 <= count <= 2 or at + 2 + count > len(der):
        return None
    return at + 2 + count, int.from_bytes(der[at + 2:at + 2 + count], "big")


def harmless_context(text: str, start: int, end: int, token: str, dots: bool = False) -> bool:
    """Whether the naming word nearest the token's body (a UUID, or its longest piece, between
    dots too with `dots`) names a harmless kind in that form (a commit's hex sha); camelCase read
    too, beside the body only."""
    if SECRECY.search(text, max(0, start - SECRECY_REACH), end + SECRECY_REACH):
        return False
    pieces = TOKEN_PIECES.split(token.replace(".", "-") if dots else token)
    uuid = UUID.search(token)
    if uuid:
        body, at = uuid.group(), uuid.start()
    else:
        body = max(pieces, key=len)
        at = token.index(body)
    if LISTED_FILE.match(text, end) or "/" in token and FILE_EXTENSION.match(text, end):
        return True  # a file's path names it too (`dist/assets/index-0B3gZeCM.js`)
    if HEX.fullmatch(token) and FILE_FRAGMENT.search(text, max(0, start - 8), start):
        return True  # the checksum after a file's URL (yarn.lock's `ms-2.1.3.tgz#<sha1>`)
    if prefix_named(text, start, token):
        return True  # `dispute dp_...`, `assistant asst_...`: a record's id by its own noun
    ranges = REVISION_RANGE.finditer(text, max(0, start - RANGE_REACH), end + RANGE_REACH)
    if HEX.fullmatch(token) and any(r.start() <= start and end <= r.end() for r in ranges):
        return True  # `A..B` names two commits
    first, last = start, end  # the token's edges
    start, end, best = start + at, start + at + len(body), NAMING_REACH + 1  # its body's
    word = ""  # the nearest naming word
    family = "id" if end == last and FILE_EXTENSION.match(text, last) else ""
    named_by = CAMEL_HUMP.sub("_", text[max(0, start - NAMING_REACH - 2):start])
    query = QUERY_NAME.search(folded_lower(named_by))
    if query:
        family = name_family(query.group(1))
    # The token's own text is read in words only where it names the body (`correlationId=`) or is
    # words (`github.com/o/r/commit/`): a random piece may spell one (`...LN+TX/...`, no tx id).
    own = text[first:start]
    if not ASSIGNS.fullmatch(own):
        wordy = all(WORD_PIECE.fullmatch(piece) or piece.isdigit() or piece.islower()
                    for piece in OWN_WORDS.split(own) if piece)
        own = own.lower() if wordy else "\1" * len(own)
    # No word cut ("sid|ecar"), and a naming word's own denial read ("never commit", 40 back).
    reach, out = max(0, first - NAMING_REACH - DENIAL_REACH), last + NAMING_REACH
    while 0 < reach and text[reach - 1].isalnum():
        reach -= 1
    while out < len(text) and text[out].isalnum():
        out += 1
    before = folded_lower(CAMEL_HUMP.sub(" ", text[reach:first] + own))
    after = folded_lower(text[end:last] + CAMEL_HUMP.sub(" ", text[last:out]))
    head, tail = len(CAMEL_HUMP.sub(" ", own)), last - end
    joined = before + "\0" + after
    credential_ends, spelled, at = set(), "", 0  # a credential's word's ends; the word said, where
    for match in () if query else NAMING_WORD.finditer(joined):
        if NAMING_FAMILIES[match.lastindex - 1] == "secret":  # type: ignore[operator]
            credential_ends.add(match.end())
        if NEGATED.search(joined, max(0, match.start() - DENIAL_REACH), match.start()) \
                or NAMES_NOTHING.search(joined, max(0, match.start() - DENIAL_REACH), match.end()):
            continue  # "a 40-char hex string, not a commit", "never commit": it names nothing
        named = NAMING_FAMILIES[match.lastindex - 1]  # type: ignore[operator]
        if named == "id" and OWN_VALUE.match(joined, match.end(), len(before) - head
                                             if match.end() <= len(before) else len(joined)):
            continue  # the id's word names its own value ("project id 4411 is <token>")
        if match.end() <= len(before):
            gap, between = max(0, len(before) - match.end() - head), before[match.end():]
        elif match.start() > len(before):
            gap = max(0, match.start() - len(before) - 1 - tail)
            between = after[:match.start() - len(before) - 1]
            if (NAMES_ANOTHER.search(between) or "," in between and not ASIDE.search(between)) \
                    and named != "secret":
                continue
            if named == "public" and (match.group() in BARE_PUBLIC
                                      and not PUBLIC_THING.match(joined, match.end())
                                      or re.fullmatch(PUBLIC_ABROAD, match.group())):
                continue  # a predicate, not a name: "never make <token> public"
        else:
            continue
        if gap < best and not CLAUSE_BREAK.search(between):
            best, family, word, at = gap, named, match.group(), match.start()
            spelled = joined[max(0, at - 1):match.end()] + between[:max(0, len(between) - head)]
    if not family and not query:  # where its cell names nothing, a table's header does (`| run_id |`)
        family = name_family(column_header(text, first))
    if not family and RECORD_PATH.search(text, first, start):
        family = "id"  # a path's collection names its record (`/api/projects/<uuid>`)
    # An id's name covers the random pieces in its form, not a cookie's base64 beside a hex.
    odd = [piece for piece in pieces if piece not in body
           and len(piece) >= RANDOM_MIN and not HEX.fullmatch(piece)
           and looks_random(piece, words=True)]
    stamped = ULID_YEARS[0] <= ksuid_year(body) <= ULID_YEARS[1]  # a KSUID may open with `0x`
    body = body[2:] if body[:2] in ("0x", "0X") else body
    if (family != "secret" or word in ("key", "keys")) \
            and ULID_YEARS[0] <= stamped_year(token) <= ULID_YEARS[1]:
        return True  # an id of this era (a row's key too), but where a credential's word names it
    if HEX.fullmatch(body) and (PASSWORD_HASH_PAIR.search(text, max(0, first - 35), last + 35)
                                or PASSWORD_HASH_NAMED.search(joined, 0, at)
                                or KERBEROS_KEY_TYPE.search(text, max(0, first - 30), first)):
        return False  # a password's hash, whatever word names it (a digest's, a commit's `sha1`)
    if family == "commit":
        return bool(HEX.fullmatch(body)) and not odd
    if family in ("id", "record"):
        # An id's word names an id's forms; an id's word or a record's noun said right before it
        # in prose (PROSE_NAMED) names them and any form as short as ids are or a 32-byte key's
        # base58 too: not a key's (`"id": "..."`), nor one compound with a credential's word
        # ("access key id"), nor a serial (a licence's is its key).
        formed = bool(HEX_ID.fullmatch(body) or UUID.fullmatch(body) or ULID.fullmatch(body)
                      or stamped)
        prose = bool(word) and PROSE_NAMED.fullmatch(spelled) and not word.startswith("serial") \
            and not credential_ends & {at - 1, at - 2}
        short = len(body) <= ID_FORM_MAX or BASE58_KEY.fullmatch(body)
        return (formed and family == "id" or prose and (formed or short)) and not odd
    if family == "session":  # a cookie's session id is its login; a tool's is a UUID or a ULID
        return bool(UUID.fullmatch(body) or ULID.fullmatch(body) or SID.fullmatch(body)) and not odd
    if family == "digest":
        value = token.rstrip("=").rsplit("=", 1)[-1]  # after its own `name=`
        return bool(HEX.fullmatch(body)) and not odd or len(value) in DIGEST_BASE64_LENGTHS
    if family == "public" and word.startswith(("address", "wallet")) and credential_ends:
        return False  # "address <WIF> is the hot wallet's private key": a key said of it
    return family in ("opaque", "public")


def prefix_named(text: str, start: int, token: str) -> bool:
    """Whether the noun right before a token spells its prefix, its letters in order (`dispute
    dp_...`, `assistant asst_...`, `order order_...`): a record's id as Stripe, OpenAI and TypeID
    write them, no longer than ids are (ID_FORM_MAX); not a credential's or a session's noun
    (`token tok_...`, `password pw_...`)."""
    prefix = ID_PREFIX.fullmatch(token)
    noun = NOUN_BEFORE.search(text, max(0, start - NAMING_REACH), start) if prefix else None
    if not noun:
        return False
    word, letters = noun[1].lower(), iter(noun[1].lower())
    return word[0] == prefix[1][0] and all(c in letters for c in prefix[1]) \
        and name_family(word) not in ("secret", "session")


def name_family(name: str) -> str:
    """The family a compound name gives its value, by its head, the last word (`run_id` an id,
    `stateValue` none); a credential's word anywhere withholds (`requestSignature`, "Session token")."""
    words = folded_lower(CAMEL_HUMP.sub(" ", name)).replace("_", " ").replace("-", " ")
    found = list(NAMING_WORD.finditer(words))
    families = [NAMING_FAMILIES[match.lastindex - 1] for match in found]  # type: ignore[operator]
    if "secret" in families or not found or words[found[-1].end():].strip(" 0123456789|`*"):
        return "secret" if "secret" in families else ""
    return families[-1]


def column_header(text: str, at: int) -> str:
    """The header cell of the Markdown table column `at` stands in, or "": only where the row
    has the header's cells and the token's own cell names nothing."""
    line_start = text.rfind("\n", 0, at) + 1
    if not text[line_start:at].lstrip().startswith("|"):
        return ""  # no table row (and no scan of the whole text for one)
    header = table_headers(text).get(line_start, "")
    if not header:
        return ""
    line_end = text.find("\n", at)
    line_end = len(text) if line_end < 0 else line_end
    row, edges = cell_edges(text[line_start:line_end]), cell_edges(header)
    column = sum(edge < at - line_start for edge in row)
    if len(row) != len(edges) or not 0 < column < len(row):
        return ""
    cell = text[line_start + row[column - 1] + 1:line_start + row[column]]
    named = NAMING_WORD.search(folded_lower(cell))
    return "" if named else header[edges[column - 1] + 1:edges[column]]


@functools.lru_cache(maxsize=4)
def table_headers(text: str) -> dict[int, str]:
    """Each table row's header, by where the row starts: the line above the nearest rule line
    (`|---|---|`) above it, in a run of lines that open with `|` (a table after a table too)."""
    headers: dict[int, str] = {}
    header = previous = ""
    at = 0
    for line in text.split("\n"):
        if not line.lstrip().startswith("|"):
            header = ""
        elif TABLE_RULE.fullmatch(line.strip()) and previous.lstrip().startswith("|"):
            header = previous
        elif header:
            headers[at] = header
        previous, at = line, at + len(line) + 1
    return headers


def cell_edges(line: str) -> list[int]:
    """Where a table line's cells meet: its `|` not escaped (in code too, as GitHub splits)."""
    return [n for n, char in enumerate(line) if char == "|" and line[n - 1:n] != "\\"]


def hook_secret(url: str) -> bool:
    """Whether a URL holds a webhook's secret: after a hook host or a path's hook piece, a part
    made as a password is, words with a number (HOOK_PHRASE), digits enough for a key or a
    token's characters among signs (`96,97,be,6f,...`), letters and a digit after a number
    (HOOK_KEY); a piece
    turning between letters and digits twice (`64htzp3`, not `python3` nor `release-2024`); or
    letters that read as no word, a piece's or a part's joined (Zapier's `catch/<id>/ewvscyy`,
    `ylbc-jtqg-vzfm-okyw`: where a hook's secret stands, words' share of vowels, RARE_VOWELS,
    tells them)."""
    host, _, path = url.partition("//")[2].partition("/")
    parts = path.split("/")
    if not any(label.startswith(("hook", "webhook")) for label in host.lower().split(".")):
        hooks = [n for n, part in enumerate(parts) if HOOK_PART.fullmatch(part)]
        parts = parts[hooks[0] + 1:] if hooks else []
    if {"commit", "commits", "blob", "tree"} & set(parts):
        return False  # a repository's page (`adnanh/webhook/commit/<sha>`)
    joined = [SIGNS.sub("", part) for part in parts]  # `Lisboa$0405`, `218162-840489-...`
    if any(credible(part, "made", part) or HOOK_PHRASE.fullmatch(part) or long_number(whole)
           or part != whole and len(whole) >= RANDOM_MIN and credential_shaped(whole)
           for part, whole in zip(parts, joined)):
        return True
    if any(before.isdigit() and HOOK_KEY.fullmatch(part) for before, part in zip(parts, parts[1:])):
        return True  # the key after an account's number (Zapier's `catch/11735235/abatd31`)
    pieces = [piece for part in parts for piece in SIGNS.split(part)]
    return any(len(piece) >= 6 and len(CLASS_TURN.findall(piece)) >= 2 for piece in pieces) \
        or any(len(letters) >= 6 and letters.isalpha() and unworded(letters, RARE_VOWELS)
               for letters in pieces + joined)


def _char_class(c: str) -> int:
    return 0 if c.isdigit() else 1 if c.islower() else 2 if c.isupper() else 3


def base64_text(run: str) -> str | None:
    """The printable text a base64 run (either alphabet) decodes to, or None."""
    alt = b"-_" if "-" in run or "_" in run else None
    bare = run.rstrip("=")
    try:
        raw = base64.b64decode(bare + "=" * (-len(bare) % 4), altchars=alt, validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return text if text.replace("\n", "").replace("\t", "").isprintable() else None


def shannon(value: str) -> float:
    return -sum(n / len(value) * math.log2(n / len(value)) for n in Counter(value).values())


def unworded(value: str, vowels: float = VOWEL_SHARE) -> bool:
    """Whether a short value's letters read as no word's: under `vowels` of them vowels, RARE_SHARE
    of the pairs inside its runs of letters not COMMON_PAIRS (rare_pairs asks RARE_PAIRS of a
    longer one)."""
    pairs = [run[i:i + 2].lower() for run in re.findall(r"[A-Za-z]+", value)
             for i in range(len(run) - 1)]
    rare = sum(pair not in COMMON_PAIRS for pair in pairs)
    return few_vowels(value, vowels) and rare >= RARE_SHARE * len(pairs)


def drawn_entropy(value: str) -> bool:
    """Whether a value is as varied as a drawn one: MIN_ENTROPY a character, or, letters and
    digits in one word shorter than 16 characters (few reach it: a draw of 8 from 36 characters
    repeats one as often as not) whose letters read as no word's (few vowels, RARE_SHARE of their
    pairs rare: not `v1beta2`, `node18lts`), all but two pairs different (`NFADYNC7`, `FCNPRRC2`).
    A number is a count and words are prose as often."""
    n = len(value)
    if shannon(value) >= MIN_ENTROPY:
        return True
    drawn = value.isalnum() and not value.isalpha() and not value.isdigit() and n > 4
    return drawn and unworded(value) \
        and shannon(value) >= ((n - 4) * math.log2(n) + 4 * math.log2(n / 2)) / n


def replace_secrets(text: str, shown: Any, stats: Counter[str] | None = None) -> str:
    """Text with each credential replaced by shown(finding): the one way a value is hidden."""
    out, pos = [], 0
    for finding in scan_secrets(text):
        if stats is not None:
            stats[f"secret_{finding.kind}"] += 1
        out.append(text[pos:finding.start])
        out.append(shown(finding))
        pos = finding.end
    out.append(text[pos:])
    return "".join(out)


def mask_secrets(text: str, stats: Counter[str]) -> str:
    """Each credential replaced by a mark that drops its sentence, counted by kind. Run on
    the whole message, so a PEM block or a token spanning lines is one span."""
    text = text.replace(SECRET_MARK, "").replace(RANDOM_MARK, "")
    return replace_secrets(text, lambda f: RANDOM_MARK if f.kind == RANDOM_KIND else SECRET_MARK, stats)


def find_pii(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of e-mail addresses and phone numbers that name a person."""
    found = []
    for match in EMAIL.finditer(text):
        local = match.group().split("@", 1)[0]
        if local == "git" or NOT_PERSONAL_EMAIL.search(match.group(1)) or NOT_PERSONAL_EMAIL.search(local):
            continue
        found.append(("email", match.start(), match.end()))
    for match in PHONE.finditer(text):
        if sum(c.isdigit() for c in match.group()) >= 8:
            found.append(("phone", match.start(), match.end()))
    return found


def clean_invisible(text: str) -> tuple[str, int]:
    """Text without invisible characters and escapes (tab becomes a space), and their count."""
    text = OTHER_BREAKS.sub("\n", text).replace("\t", " ")
    text, removed = ANSI_ESCAPE.subn("", text)
    text, more = INVISIBLE.subn("", text)
    return text, removed + more


# -- the per-sentence verdict ------------------------------------------------------------

# The stages a sentence reaches once SIGNAL has matched it; `signal` counts them all.
PAST_SIGNAL = frozenset({"candidate", "dropped_noise", "dropped_length", "dropped_weak"})


class Verdict(NamedTuple):
    stage: str    # the stats counter the sentence lands in, or "candidate": it goes on
    reason: str   # the rule that decided, for --explain
    text: str     # the sentence ("" when it must not be shown)
    score: int
    asks: str = ""  # of a memory request: "content", "points" (points back) or "pulled"
    request: str = ""  # "FILE:LINE" of that request


NO_SIGNAL = Verdict("dropped_no_signal", "", "", 0)


def judge(sentence: str, role: str, opts: Options, signal: re.Pattern[str],
          noise: re.Pattern[str], phrases: Sequence[str] | None = None, asked: bool = False,
          requested: bool = False) -> Verdict:
    """SIGNAL first (`asked` needs none), then the gates, NOISE and length. The gates judge
    only what SIGNAL picked: the summary must not depend on unscanned messages. A rule a
    request or an offer states (`requested`) may be short, and stands (REQUEST_STANDS)."""
    text = sentence.strip()
    lowered = text.lower()
    hit = asked or (phrases is None or any(p in lowered for p in phrases)) and signal.search(lowered)
    if not hit:
        return NO_SIGNAL
    if SECRET_MARK in sentence:
        return Verdict("dropped_secret", "secret", "", 0)
    if RANDOM_MARK in sentence:
        return Verdict("dropped_secret", "random-looking token", "", 0)
    gated = gate(text, opts, role)
    if gated:
        return gated
    bad = (REQUESTED_NOISE if requested and noise is NOISE else noise).search(lowered)
    if bad:
        return Verdict("dropped_noise", rule_name(bad), text, 0)
    columns = width(text)
    if columns < (REQUEST_MIN_WIDTH if requested else MIN_WIDTH) or columns > MAX_WIDTH:
        return Verdict("dropped_length", f"{columns} columns", text, 0)
    # A request's rule is printed without its frame: judged alone too, as a token its frame named
    # harmless ("remember the tenant id: <uuid> ...") is then a random one. (A sentence keeps the
    # words that name its tokens: a naming word reaches across no sentence's end.)
    alone = scan_secrets(text) if asked else []
    if alone:
        return Verdict("dropped_secret", "random-looking token" if alone[0].kind == RANDOM_KIND
                       else "secret", "", 0)
    kind = REQUEST_KIND if hit is True else rule_name(hit)
    return Verdict("candidate", kind, text, sum(points for _, points in score_parts(text, role, kind)))


def gate(text: str, opts: Options, role: str = "") -> Verdict | None:
    """The safety gates (deceptive text, personal data, injection, structure), or None."""
    if BIDI.search(text):
        return Verdict("dropped_invisible", "bidi", "", 0)
    if not opts.allow_pii:
        pii = find_pii(text)
        if pii:
            return Verdict("dropped_pii", pii[0][0], "", 0)
    if INJECTION.search(text) or role != "user" and INJECTION_UNLESS_USER.search(text):
        return Verdict("dropped_injection", "injection", "", 0)
    if STRUCTURE.search(text):
        return Verdict("dropped_structure", "structure", text, 0)
    if "@" in text and AT_IMPORT.search(CODE_SPAN.sub("", text)):
        return Verdict("dropped_structure", "at-import", text, 0)
    return None


def memory_request(sentence: str) -> tuple[str, str] | None:
    """(rule, content) of a user's memory request; content is "" when it points back."""
    last = verb_last_request(sentence)
    if asks(sentence) and not last:
        return None  # "Remember that error you showed me?" asks; "書いといてくれる？" asks for it
    # After a colon the content is a clause, never a topic ("Add to GEMINI.md: for the C code, X").
    found = next(((name, match.group("content"), name in TOPICAL
                   and not sentence[:match.start("content")].rstrip().endswith((":", "：")))
                  for name, pattern in REQUESTS
                  for match in [pattern.match(sentence)]
                  if match and not NEGATED.search(sentence, 0, match.start("content"))
                  and not ram_named(match)), None)
    found = found or last or framed_request(sentence)
    if not found:
        return None
    name, content, topical = found
    # A question mark ends the asking ("can you add ... ?"), not the rule; nor does courtesy.
    content = COURTESY.sub("", TAG_QUESTION.sub("", content)).strip().rstrip("?？ ")
    content = REQUEST_FORWARD.sub("", content).lstrip("—–:： ")  # "codify that — X"
    content = IF_COLON.sub("", content)
    # A phrase for later sessions alone, or before a pointer or a reason, points back ("X. Remember
    # that going forward.", "remember that for the future, so you don't ...").
    ahead = FUTURE_ALONE.match(content)
    if ahead and REQUEST_POINTER.match(content[ahead.end():].lstrip(" ,，")):
        content = ""
    # A nod or one word carries no rule ("Да, занеси это в правила проекта", "对，把这条加到项目
    # 规则里"): in a script without spaces, a rule takes more than ONE_WORD characters.
    one_word = not re.search(r"\s", content) \
        and (not CLOSE_SCRIPT.search(content) or len(content) <= ONE_WORD)
    leftover = LEFTOVER.match(content) and len(content.split()) <= LEFTOVER_WORDS
    pointer = REQUEST_POINTER.match(content) or REMARK.match(content) or leftover \
        or content[:1] in ",，" \
        or LEADS_ONLY.fullmatch(content) or one_word \
        or topical and REQUEST_TOPIC.match(content) and not scoped_rule(content)
    # ... and so does a frame left in it ("remember that for next time, put it in memory"); in a
    # script without spaces a rule before its closing frame reads as one (LEFTOVER: particles).
    if not pointer and len(content) < len(sentence) and not CLOSE_SCRIPT.search(content):
        inner = memory_request(content)
        pointer = bool(inner) and not inner[1]
    # ... but a rule after a colon past the pointer is the content ("I want this in CLAUDE.md, word
    # for word: X").
    after = COLON_REST.search(content) if pointer else None
    if after and not REQUEST_POINTER.match(after[1]) and len(after[1].split()) >= COLON_WORDS:
        content, pointer = after[1], False
    if MOMENT.search(content.lower()) or OWN_NEWS.match(content) or content.endswith((":", "：")):
        return None  # "Remember: for now, skip the tests" is this session's; "X:" shows what comes
    quoted = QUOTED_RULE.search(sentence) if pointer else None
    if quoted and (CLOSE_SCRIPT.search(quoted[1]) or len(quoted[1].split()) >= QUOTED_WORDS):
        return name, quoted[1]  # the rule quoted in the frame: AGENTS.md に「X」と書いて
    return name, "" if pointer else content


def verb_last_request(sentence: str) -> tuple[str, str, bool] | None:
    """(frame, rule, False) of a request whose verb closes it (VERB_LAST): the rule runs from the
    memory's name before it, or the sentence's start, to the quotative; a verb of writing needs
    the memory named, one of remembering none. The rule is "" where the place and the verb alone
    point back (VERB_ALONE); else a frame may open the sentence (verb_first_request)."""
    if not VERB_LAST_SCRIPT.search(sentence):
        return None  # (Japanese, Korean, Turkish)
    alone = VERB_ALONE.match(sentence)
    if alone and not done_or_denied(alone["ending"], sentence) \
            and not THING_KEPT.search(alone["place"]):
        return "memory-file", "", False
    match = VERB_LAST.search(sentence)
    if not match:
        return verb_first_request(sentence)
    if done_or_denied(match["ending"], sentence):
        return None
    before = sentence[:match.start()]
    places = list(PLACE_LAST.finditer(before))
    named = NAMED_LAST.search(sentence, 0, match.start("verb"))
    if not (named or match["verb"].lower() in REMEMBERING_LAST):
        return None
    quoted = QUOTED_LAST.search(before)
    rule = quoted[1] if quoted else before[places[-1].end():] if places else before
    rule = "" if POINTER_OPENS.match(rule) else rule  # "これをルールとして": what it is, said before
    return ("memory-file" if named else "remember-that"), rule.strip(" 、,，\"“”「」『』"), False


def verb_first_request(sentence: str) -> tuple[str, str, bool] | None:
    """(frame, rule, False) of a request whose verb closes a frame opening it (VERB_FIRST)."""
    match = VERB_FIRST.match(sentence)
    if not match or THING_KEPT.search(match["frame"]) or MOMENT.search(match["frame"].lower()) \
            or done_or_denied(f"{match['ending'] or match['tight'] or ''} {match['content'][:3]}",
                              sentence):
        return None  # (a denial may open what follows the verb: "저장하지 마")
    named = NAMED_LAST.search(match["frame"], 0, match.start("verb"))
    colon = match.group()[match.end("frame"):match.start("content")].strip()[-1:] in ":："
    if not (named or colon and match["verb"].lower() in REMEMBERING_LAST):
        return None
    return ("memory-file" if named else "remember-that"), match["content"].strip(" 、,，"), False


def done_or_denied(ending: str, sentence: str) -> bool:
    """Whether a closing verb's ending denies it or says it is done (VERB_LAST_NOT, Korean's
    final ㅆ), the sentence makes it the speaker's or needless (OWN_OR_NO_NEED), or it asks
    something of its own (a question whose ending asks for nothing)."""
    if OWN_OR_NO_NEED.search(sentence):
        return True
    ending = ending.strip()
    past = any((ord(c) - 0xAC00) % 28 == 20 for c in ending  # a syllable's final ㅆ
               if "가" <= c <= "힣" and c not in PAST_NOT)
    return past or bool(VERB_LAST_NOT.search(ending)) \
        or asks(sentence) and not ASKED_LAST.search(ending)


def scoped_rule(content: str) -> bool:
    """Whether a topic's words lead a rule ("for the payments module, amounts are integer
    cents"): the clause after them would be proposed on its own, however short (a request's rule
    may be). Not a remark to the agent ("for the new module, you figure out what matters")."""
    tail = LAST_CLAUSE.split(content, 1)[1:]
    parts = score_parts(tail[0], "user", REQUEST_KIND) if tail else []
    return bool(tail) and sum(points for name, points in parts if name != "short") >= MIN_SCORE


def refused(sentence: str) -> bool:
    """Whether a sentence refuses to record what was said ("don't put that in CLAUDE.md, it's a
    one-off"): about this session's words, no rule; "Never put credentials in CLAUDE.md" is one."""
    opened = REFUSAL.match(sentence)
    clause = LAST_CLAUSE.split(sentence[opened.end():], 1)[0].lower() if opened else ""
    verb = RECORD.match(clause)
    named = MEMORY_OR_BARE.search(clause, verb.end()) if verb else None
    said = PLACE_WORD.sub("", clause[verb.end():named.start()]).strip() if named and verb else ""
    remembering = REMEMBER.match(clause) if opened and not said else None
    if remembering:  # ... or of remembering, which needs none ("don't memorise any of this")
        said = clause[remembering.end():].strip()
        return bool(REQUEST_POINTER.match(said) or ANY_OF_IT.match(said))
    if opened and CLOSE_SCRIPT.match(clause):  # ... what was said before the verb ("不要把这个记到记忆里")
        verb = RECORD.search(clause)
        said = clause[:verb.start()] if verb and MEMORY_OR_BARE.search(clause, verb.end()) else said
    return bool(said and (REQUEST_POINTER.match(said) or ANY_OF_IT.fullmatch(said)))


def asks(sentence: str) -> bool:
    """A question that is no polite request ("Remember the function we wrote?"; not "Can you
    add that to CLAUDE.md?"); "..., ok?" asks for a nod."""
    lowered = TAG_QUESTION.sub("", sentence.lower()).rstrip()
    return lowered.endswith(("?", "？")) and not POLITE_ASK.search(lowered)


def ram_named(match: re.Match[str]) -> bool:
    """Whether a bare "memory" or "rules" holds a thing ("save the results in memory"), not
    what was said ("put that in memory", "keep a note in memory that X", "add a rule to memory")."""
    groups = match.groupdict()
    said = match.string[match.end("bare"):match.start("content")] if groups.get("bare") else ""
    return bool(groups.get("bare") and groups.get("object", "").strip()
                and not REQUEST_POINTER.fullmatch(groups["object"].strip())
                and not LINE_NAMED.fullmatch(groups["object"].strip())
                and not QUOTED_RULE.fullmatch(groups["object"].strip())
                and not re.search(r"[:：]|\bthat\b|\bsaying\b", said))


def offered(sentence: str) -> str | None:
    """What an agent's offer to record something holds (OFFER_END): a request after the offer's
    own words ("Should I" record in CLAUDE.md that X, "Je peux l'"ajouter à AGENTS.md); "" when
    it points back; None if no offer."""
    text = OFFER_END.sub("", sentence.strip())
    lowered = text.lower()
    if text == sentence.strip() or not any(word in lowered for word in REQUEST_WORDS):
        return None
    starts = [0] + [at for at in range(1, min(len(text), FRAME_REACH))
                    if text[at - 1].isspace() or text[at - 1] in "'’"
                    or CLOSE_SCRIPT.match(text[at - 1])]
    return next((found[1] for at in starts for found in [memory_request(text[at:])] if found), None)


def nodded(text: str) -> bool:
    """Whether a user's reply is a short yes ("please do", "Oui, ajoute-le.", "好的，记上吧"),
    with nothing after it but courtesy or a verb of recording ("sure, run the tests" is no nod)."""
    reply = re.sub(r"^[^\w]+", "", text.strip())  # "👍 yes"
    yes = CONSENT.match(reply)
    rest = re.sub(r"^[\W_]+|[\W_]+$", "", reply[yes.end():]) if yes else ""  # "好的 👌"
    rest = re.sub(r"(?<=\w)-\w+", "", rest)  # a pronoun after its verb ("ajoute-le")
    return bool(yes) and len(reply) <= CONSENT_REACH and not NEGATED.search(reply) and (
        not rest or bool(COURTESY.fullmatch(rest) or RECORD.match(rest) or NOD_MORE.fullmatch(rest)
                         or CLOSE_SCRIPT.search(rest) and len(rest) <= CONSENT_CJK))


def framed_request(sentence: str) -> tuple[str, str, bool] | None:
    """(frame, content, whether a topic may stand for the content) by REQUEST FRAMES: the
    rule after a frame opening the sentence, or before one closing it; a frame alone points back."""
    # Lower case of the same length, so places in it cut the sentence (Turkish `İ` is two).
    lowered = sentence.lower()
    if len(lowered) != len(sentence):
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in sentence)
    lowered = TAG_QUESTION.sub("", lowered).rstrip()
    # A parenthesis is a clause of its own ("X (please add that to CLAUDE.md)").
    lowered = PARENTHESIS.sub(lambda m: ", " + m[1] + " ", lowered)
    opens = FUTURE_OPENS.match(lowered)
    if opens:
        return "from-now-on", sentence[opens.start("content"):], False
    label = 0  # where a frame after a label opens ("Rust stuff: remember going forward that X")
    for separator in FRAME_STRONG.finditer(lowered):
        if separator.start() > label + FRAME_REACH + 10:
            break  # ... as far after a label as from the start
        # ... or after a clause of context ("that took an hour; remember that X")
        semicolon = lowered.rfind("; ", 0, separator.start())
        colon = separator.group().strip() in (":", "：")
        # After "that" or a colon the content is a clause, never a topic (French "on": "we"). Before
        # any of these a bare memory is the agent's ("Guarda na memória que X", "add to the
        # rules → X").
        that = separator.group().strip(" ,")[:1].isalpha()
        stated = that and not RELATIVE_OPENS.match(lowered, separator.end())
        # ... or, before a colon, after a dash ("Before all else — memory.md needs this: X")
        dashed = (JOINED if colon else DASHED).finditer(lowered, 0, separator.start())
        dash = max((match.end() for match in dashed), default=0)
        starts = dict.fromkeys((0, label, semicolon + 2 if semicolon >= 0 else 0, dash))
        kinds = (frame_kind(COURTESY.sub("", lowered[start:separator.start()]), opening=True,
                            strong=True, stated=stated, colon=colon) for start in starts)
        kind = next(filter(None, kinds), None)
        label = separator.end() if colon else label
        if kind and that and EDITED_PART.match(lowered, 0, separator.start()) \
                and RELATIVE_OPENS.match(lowered, separator.end()):
            continue
        if kind and not lowered[separator.end():].strip():
            # "Put this in CLAUDE.md:" points at the lines after it, pulled in as the turn before
            # is; "Remember the following:" is as often a reminder for today.
            frame = COURTESY.sub("", lowered[:separator.start()])  # "... to CLAUDE.md please:"
            if colon and ENDS_IN_MEMORY.search(frame):  # "New rule for CLAUDE.md:" too
                return kind, "", False
            return None
        if kind:
            return kind, sentence[separator.end():], kind == "memory-file" and not (that or colon)
    # A comma ends a frame that names later sessions ("remember for next time, X").
    comma = lowered.find(",")
    if 0 < comma and frame_kind(lowered[:comma], opening=True) == "remember-that" \
            and FUTURE_ALONE.search(lowered, 0, comma):
        return "remember-that", sentence[comma + 1:].lstrip(), False
    plain = COURTESY.sub("", lowered).rstrip(" .。!！?？")  # a polite question asked already
    closing = [m for m in FRAME_CLOSE.finditer(plain) if len(plain) - m.end() <= FRAME_REACH]
    if closing:
        cut = closing[-1]
        # A bare memory beside its verb and a pointer holds what was said ("X, save that to
        # memory"), but not after a clause that is no statement ("Since the dump is small, keep it
        # in memory": a thing kept in RAM).
        part = plain[cut.end():]
        bare = said_only(part) and not (CONDITION_OPENS.match(plain) or REASON_OPENS.match(plain))
        kind = frame_kind(part) or (frame_kind(part, strong=True) if bare else None)
        framed = kind in ("remember-that", "memory-file")
        inner = memory_request(sentence[cut.end():]) \
            if framed or MEMORY_NAMED.search(plain, cut.end()) else None
        if framed or inner and inner[0] in MEMORY_RULES:  # ... or a request rule's (记到记忆文件里)
            # "When deploying, add to CLAUDE.md that X": X after the frame, under its condition;
            # what else stands before it ("Thanks for fixing it, remember that X") goes.
            kind = kind if framed else inner[0]
            if MOMENT.search(plain, 0, cut.start()):
                return None  # ... but not this session's scope ("Just for this chat, remember X")
            if inner and inner[1]:
                head = sentence[:cut.end()] if CONDITION_OPENS.match(sentence) else ""
                return inner[0], head + inner[1], False
            return kind, sentence[:cut.start()], False
    aim = PURPOSE.sub("", plain)  # "so you stop forgetting" says why
    own = OWN_CLAUSE.search(aim)
    frame = REMEMBER.match(plain)
    rest = plain[frame.end():].strip() if frame else ""
    if frame and not own and not CLOSE_SCRIPT.search(plain) and not REQUEST_POINTER.match(rest) \
            and frame_kind(frame.group()) == "remember-that" and not MOMENT.search(plain) \
            and not OTHER_PLACE.match(rest):
        at = lowered.find(rest)  # "remember logs use X" states; "remember the 3pm meeting" reminds
        stated = rest[:1] not in ",，" and CLAUSE_VERB.search(CLAUSE_END.split(rest, 1)[0])
        if stated:
            return "remember-that", sentence[at:at + len(rest)], False
        if not MEMORY_NAMED.search(rest):
            return None  # ... but "merk dir das in der agents.md" names where: a frame alone
    # A purpose clause denies nothing ("..., чтобы не искать").
    alone = frame_kind(aim) if not own else None
    # ... but one of not forgetting names the memory ("Save that so you don't forget.").
    if not own and RECORD.match(plain) and FORGETTING.search(plain):
        alone = alone or "memory-file"
    # ... and so does a bare memory beside its verb that holds only what was said ("Guárdalo en
    # memoria", "メモリに保存して"), as "save it in memory" does in English (REQUESTS).
    # A rule made is no RAM's, whatever its purpose ("make that a rule in memory so this stops").
    said = aim if LINE_NOUN.search(aim) else plain
    if not (own or alone) and said_only(said) and frame_kind(said, strong=True) == "memory-file":
        alone = "memory-file"
    # A label naming a memory file, a sentence of its own, points at the rule beside it ("New
    # rule for CLAUDE.md. Don't use default exports.").
    if not alone and FUTURE_LABEL.fullmatch(plain) and ENDS_IN_MEMORY.search(plain):
        alone = "from-now-on"
    if alone:
        return alone, "", True
    # Last, a verb of recording and a memory named as its place, wherever the sentence puts them
    # ("it would help if you'd add this to your notes"): the rule after a separator past the
    # place, or what was said before.
    place = MEMORY_PLACE.search(plain)
    verb = RECORDED.search(plain, 0, place.start()) if place else None
    between = plain[verb.end():place.start("name")] if verb else ""
    if verb and MODAL_OPENS.match(plain) and not NAMED_PLACE.fullmatch(place["name"]) \
            and not REQUEST_POINTER.fullmatch(PLACE_WORD.sub("", " " + between).strip()):
        verb = None  # after "¿puedes", "kannst du": a file's name, or what was said, is the place
    before = plain[:verb.start()] if verb else ""
    denied = verb and (FRAME_DENIED.search(plain, 0, place.end()) or REFUSAL.search(before)
                       or OWN_ACT.search(before) or quoted(before))
    if verb and not denied and placed(between):
        after = FRAME_STRONG.search(lowered, place.end())
        that = after and after.group().strip(" ,")[:1].isalpha()
        if that and RELATIVE_OPENS.match(lowered, after.end()):
            return None  # "the snippet in AGENTS.md that still calls X" names a part, no rule
        return "memory-file", sentence[after.end():] if after else "", False
    return None


def quoted(before: str) -> bool:
    """Whether a quotation left open before a word holds it: someone's words reported ('a post
    saying "store every decision in CLAUDE.md"', 'ele disse "coloca isso no CLAUDE.md"')."""
    german = min(before.count("„"), before.count("“"))  # „so“: “ closes, as ” does in English
    opened = sum(map(before.count, "“«„「『")) - sum(map(before.count, "”»」』")) - 2 * german
    return opened > 0 or before.count('"') % 2 == 1


def placed(between: str) -> bool:
    """Whether the words between a verb of recording and a memory's name leave the memory its
    place: not a thing's own verb ("write a script that parses CLAUDE.md") nor its purpose ("a
    parser for the rules file"; but "a note for CLAUDE.md")."""
    words = between.strip()
    place = PLACE_WORD.search(" " + words + " ")
    thing = words[:place.start()].strip() if place else words
    purpose = bool(place) and place.group().split()[0] in PURPOSE_WORDS
    return not THING_DOES.search(words) and not (purpose and thing and not (
        LINE_NAMED.fullmatch(thing) or REQUEST_POINTER.fullmatch(thing)))


def said_only(frame: str) -> bool:
    """Whether a frame's verb and bare memory hold only what was said: a pointer at most before
    them ("これをメモリに保存して", "por favor, guárdalo en memoria") and nothing after but a verb's
    ending ("保存してください"). A thing named ("キャッシュをメモリに保存して") or a next step ("...
    からディスクに書き出して", "... pra não recalcular") keeps a thing in RAM."""
    verb, bare = RECORD.search(frame), MEMORY_OR_BARE.search(frame)
    if not verb or not bare:
        return False
    before = frame[:min(verb.start(), bare.start())].rstrip(" ,，をにへ을를에")
    after = frame[max(verb.end(), bare.end()):].strip()
    return (not before or bool(LEADS_ONLY.fullmatch(before) or REQUEST_POINTER.match(before))) \
        and (not after or bool(CLOSE_SCRIPT.search(after)) and len(after) <= VERB_ENDING)


def frame_kind(part: str, opening: bool = False, strong: bool = False,
               stated: bool = False, colon: bool = False) -> str | None:
    """Whether a sentence's part is a request's frame, named as REQUEST_RULES names its kind;
    a phrase for later sessions frames only when it is all of a part opening the sentence, a
    bare memory (MEMORY_BARE) only before a `strong` separator (FRAME_STRONG: ":", "—", "that"),
    a rule added ("add a rule") only before a "that" opening a clause with its own subject
    (`stated`: "add a rule that you ask first", not "add a rule that blocks port 22"), a verb
    and a memory named apart, or a memory named as the label, only before a `colon`."""
    part = IF_CLAUSE.sub("", part)
    if not part or len(part) > FRAME_REACH or FRAME_DENIED.search(part):
        return None
    if REMEMBER.search(part) or opening and strong and TO_REMEMBER.fullmatch(part):
        return "remember-that"
    if opening and FUTURE_LABEL.fullmatch(part):  # "For next time: X", not "Plans for the future:"
        return "from-now-on"
    # The verb opens the part's last clause ("so add it to CLAUDE.md"); after "¿puedes", "kannst
    # du" ..., a memory file by its name ("tu memoria" is often a phone's).
    for clause in dict.fromkeys((part, LAST_CLAUSE.split(part)[-1])):
        named = (NAMED_PLACE if MODAL_OPENS.match(clause) else MEMORY_NAMED).search(clause)
        verb = RECORD.search(clause)
        if not named and strong and verb:  # a bare memory beside its verb, no thing between
            bare = MEMORY_OR_BARE.search(clause)  # ("guarda en la memoria", "メモリに保存して")
            between = (clause[verb.end():bare.start()] if bare.start() >= verb.end()
                       else clause[bare.end():verb.start()]).strip() if bare else ""
            # ... but a place's words ("in the", "to"): "add more memory to the pod" asks for RAM.
            named = bare if bare and (not between or CLOSE_SCRIPT.search(between)
                                      or BARE_PLACE.fullmatch(between + " ")
                                      or LINE_NOUN.search(between)) else None  # "make it a rule in"
        # ... in one clause: not "revert what you did to AGENTS.md, I want to write that myself".
        if named and verb and not LAST_CLAUSE.search(clause, min(named.end(), verb.end()),
                                                     max(named.start(), verb.start())) \
                and (named.start() < verb.start() or placed(clause[verb.end():named.start()])):
            return "memory-file"
    # ... or a memory file by its file name as the place, whatever the verb ("dopisz do CLAUDE.md"):
    # a file's name is no RAM's nor a linter's, and the separator after it opens the rule.
    if opening and FILE_AS_PLACE.search(part) and (
            LINE_NOUN.search(part)
            or any(RECORD.match(clause) for clause in LAST_CLAUSE.split(part))):
        return "memory-file"  # ... the verb opening its clause: "I want to write" is no request
    # "add it to the notes so you remember": kept so as not to forget, a memory's ("save that so
    # you don't forget"; not "save the results so ...").
    if RECORD.match(part) and FORGETTING.search(part):
        return "memory-file"
    # "Gotcha worth recording in AGENTS.md": what was said, weighed as worth a place in a memory.
    worth = WORTH.search(part)
    if worth and MEMORY_NAMED.search(part, worth.end()):
        return "memory-file"
    # "Persist this preference: X": what is recorded is named a memory's kind of line.
    if opening and RECORD.search(part) and (KIND_NAMED.search(part) or FOR_GOOD.search(part)
                                            or stated and RULE_ADDED.search(part)):
        return "memory-file"  # ... or kept for good ("store this permanently: X")
    # "Two things to add to CLAUDE.md: X": the memory ends the frame as the place the rule goes.
    into = INTO_MEMORY.search(part) if opening else None
    if into and (RECORDED.search(part) or into[1] == "for"  # "A note for the memory file: X"
                 or POINTED.match(part)):  # ... or any verb: "burn this into your instructions:"
        return "memory-file"
    # Before a colon: a verb opening its clause and a memory named anywhere ("can u add smth to
    # ur notes:", "proje notlarına ekle:"), or a memory named as the label ("memory file:",
    # "memory.md needs this:"). Not "add this:" alone, as often code's ("add this to the top of
    # main.py:"), nor the speaker's act ("let me save it to my notes:").
    if colon and not OWN_ACT.search(part) and (RECORD.search(part) and MEMORY_NAMED.search(part)
                                               or PLACE_LABEL.fullmatch(part.strip())):
        return "memory-file"
    return None


def score_parts(text: str, role: str, kind: str = "") -> list[tuple[str, int]]:
    """The score as (rule, points), starting from BASE_SCORE; `--explain` prints them. A kind
    of STATED_KINDS says the sentence is memory, as a rule of kind does (FORM_RULES)."""
    parts = [("base", BASE_SCORE)]
    lowered = text.lower()
    parts += [(name, points) for name, who, pattern, points in SCORE if who in ("", role) and pattern.search(lowered)]
    marker_only = all(points <= 0 or name in FORM_RULES for name, points in parts)
    if marker_only and kind not in STATED_KINDS:
        parts = [part for part in parts if part[0] != "from-user"]
    columns = width(text, SCORE_WIDE)
    if columns < SHORT_WIDTH and not any(name in USER_RULES for name, _ in parts):
        parts.append(("short", SHORT_POINTS))  # brevity is a virtue in a user's rule
    elif columns >= LONG_WIDTH:
        parts.append(("substantial", LONG_POINTS))
    return parts


def explain_score(cand: Candidate) -> str:
    kind = REQUEST_KIND if cand.request else cand.kind  # as judge scored it
    parts = score_parts(cand.text, "note" if cand.source else cand.role, kind)
    return f"score {cand.score}: " + ", ".join(f"{name} {points:+d}" for name, points in parts)


# == One transcript: read, pick visible text, split, gate, filter. Runs in a worker. ===

class FileResult(NamedTuple):
    candidates: list[Candidate]
    stats: Counter[str]
    explain: list[tuple[tuple[int, int, int, int], str]]
    writes: list[tuple[str, MemoryWrite]] = []  # (file, write): the session's own memory edits
    conversation: str | None = None  # the transcript's conversation key (with a baseline)
    through: int = 0                 # its last complete record


def aider_head(body: bytes) -> bool:
    """Whether a file's head reads as an Aider history: it opens as one (AIDER_STARTS), holds a
    user's line, or opens so past aider's own output (`> ` lines ending in its two spaces; an
    interrupted run leaves `> ^C again to exit  `)."""
    if body.startswith(AIDER_STARTS) or b"\n#### " in body:
        return True
    lines = [line.rstrip(b"\r") for line in body.split(b"\n") if line.strip()]
    quoted = [line for line in lines if line.startswith(b">")]
    rest = [line for line in lines if not line.startswith(b">")]
    aiders = all(line.endswith(b"  ") or line == b">" for line in quoted)
    return bool(quoted) and aiders and (not rest or rest[0].startswith(AIDER_STARTS))


def detect_format(path: str, head: list[bytes]) -> str:
    """The reader for a file, from its first lines (a .jsonl may be one JSON object)."""
    if head and head[0].startswith(SQLITE_MAGIC):  # which store: OpenCode's is read, others are not
        if any(b"ItemTable" in raw or b"cursorDiskKV" in raw for raw in head):
            return "vscdb"
        return "opencode" if path != "-" and is_opencode_db(path) else "sqlite"
    lines = [raw.lstrip(b"\xef\xbb\xbf") for raw in head]
    body = b"".join(lines).lstrip()
    if looks_like_specstory(body, lines):
        return "specstory"
    if body.startswith(AIDER_STARTS) or (path.endswith(".md") and aider_head(body)):
        return "aider"
    first = next((raw.strip() for raw in lines if raw.strip()), b"")
    named_document = path.endswith((".json", ".traj")) and first.startswith(b"{")  # .traj: SWE-agent's
    if first in (b"{", b"[") or first.startswith(b"[") or named_document:
        return "document"  # pretty-printed, a JSON array, or named as one document
    # Parsed as the sniffer asks for them: the first record usually decides.
    records = (r for raw in lines if raw.strip() for r in parse_jsonl_line(raw) or [])
    return sniff_records(records) or ("aider" if path.endswith(".md") else "native")


def read_head(stream: Any) -> list[bytes]:
    head: list[bytes] = []
    for raw in iter(stream.readline, b""):
        head.append(raw)
        if len(head) == SNIFF_LINES or sum(map(len, head)) >= SNIFF_BYTES:
            break
    return head


def _load_document(path: str, data: bytes) -> Any:
    """A transcript that is one JSON document (bounded by its size, not streamed)."""
    try:
        return json.loads(data.lstrip(b"\xef\xbb\xbf").decode("utf-8", "surrogatepass"))
    except RecursionError:
        raise UserError(path, "JSON nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(path, "not valid JSON", getattr(exc, "lineno", None)) from None


def read_transcript(path: str, stream: Any, opts: Options, stats: Counter[str],
                    pos: Position | None = None) -> tuple[str, Iterator[Message]]:
    """The format of one transcript and its visible prose, past what the baseline reviewed."""
    head = read_head(stream)
    sniffed = detect_format(path, head)
    fmt = opts.fmt or sniffed
    if fmt in NOT_READ:
        raise UserError(path, f"{NOT_READ[fmt]}: a format memory-diff recognises but does not read")
    if fmt == "opencode":
        if path == "-":
            raise UserError(path, "an OpenCode database cannot be read from standard input")
        return fmt, read_opencode(path, opts, stats)
    lines = itertools.chain(head, stream)
    head_records = lambda: (r for raw in head if raw.strip() for r in parse_jsonl_line(raw) or [])  # noqa: E731
    pos = pos or Position()  # without a baseline: nothing reviewed, no conversation key
    if opts.baseline is not None and fmt != "document":
        locate(pos, path, fmt, head_records(), opts)
    if fmt == "aider":
        body = b"".join(head).lstrip(b"\xef\xbb\xbf").lstrip()
        if not aider_head(body):
            reason = ("no line is an Aider chat line (#### )" if opts.fmt
                      else "a Markdown file, not an Aider chat history")
            raise UserError(path, f"not a transcript: {reason}")
        return fmt, read_aider(lines, opts, stats, pos)
    if fmt == "specstory":
        return fmt, read_specstory(lines, opts, stats, pos)
    if fmt in ("codex", "claude", "native", "copilot") or (fmt == "messages" and sniffed != "document"):
        if fmt == "codex":
            messages: Iterator[Message] = CodexReader(opts, stats).read(lines, pos)
        elif fmt == "claude":
            messages = read_jsonl(lines, claude_reader(opts), stats, pos, claude_may_hold_prose)
        else:
            reader = {"native": native_reader, "copilot": copilot_reader}.get(fmt, messages_reader)(opts)
            messages = read_jsonl(lines, reader, stats, pos)
        return fmt, recognised(path, fmt, bool(opts.fmt), stats, messages,
                               lambda: stats["lines"] == stats["blank"] or any(
                                   record_format(r) == fmt for r in head_records()),
                               lambda: b"\0" in b"".join(head))
    doc = _load_document(path, b"".join(lines))
    if fmt == "document":
        fmt = sniff_document(doc) or ""
        if fmt in NOT_READ:
            raise UserError(path, f"{NOT_READ[fmt]}: a format memory-diff recognises but does not read")
    kind = trajectory_kind(doc)
    if kind:
        raise UserError(path, f"a {kind} trajectory: a format memory-diff recognises but does not read "
                              "(an autonomous run, with no human user in it)")
    if not fmt:
        raise UserError(path, "not a transcript: a JSON document of no shape memory-diff reads")
    if opts.baseline is not None:
        locate(pos, path, fmt, [doc], opts)
    found = doc.get("messages") if isinstance(doc, dict) else doc
    reader = gemini_reader(opts) if fmt == "gemini" else messages_reader(opts, cline=fmt == "cline")
    messages = read_document(found, reader, stats, pos)
    return fmt, recognised(path, fmt, bool(opts.fmt), stats, messages,
                           lambda: isinstance(found, list) and (not found or any(
                               isinstance(m, dict) and ("role" in m or "type" in m) for m in found)),
                           lambda: False)


# -- is it a transcript at all? -----------------------------------------------------------

# Counters only a record of the format lands in (any line can reach skipped_meta).
RECOGNISED = ("prose", "skipped_tool_output", "skipped_tool_call", "skipped_thinking", "skipped_injected",
              "skipped_role", "skipped_sidechain", "skipped_summary", "skipped_duplicate_event",
              "skipped_empty", "skipped_baseline")


def recognised(path: str, fmt: str, forced: bool, stats: Counter[str], messages: Iterator[Message],
               any_known: Any, binary: Any) -> Iterator[Message]:
    """The messages, then an error when no record was one of `fmt`: a wrong file should
    say so rather than propose nothing (an empty file is fine: `any_known`)."""
    yield from messages
    if any(stats[k] for k in RECOGNISED) or any_known():
        return
    records = stats["lines"] - stats["blank"]
    s = "s" if records != 1 else ""
    if binary():
        reason = "binary data, no line is a JSON record"
    elif records == 0:
        reason = "a JSON document with no list of messages" + (f" (--format {fmt})" if forced else "")
    elif stats["malformed"] == records:
        reason = f"none of its {records} line{s} is a JSON record"
    elif forced:
        reason = f"none of its {records} record{s} is a {fmt} record (--format {fmt})"
    else:
        reason = f"{records} record{s} of no format memory-diff reads"
    raise UserError(path, f"not a transcript: {reason}")


def record_format(record: Any) -> str | None:
    """The format one record belongs to (a Claude Code snapshot or system record too)."""
    if isinstance(record, dict) and record.get("type") in CLAUDE_TYPES and "payload" not in record \
            and ("sessionId" in record or "messageId" in record or "uuid" in record):
        return "claude"
    return sniff_records([record])


def trajectory_kind(doc: Any) -> str | None:
    """The agent of an autonomous-run trajectory: with no human user, it holds no decision."""
    if isinstance(doc, dict):
        if str(doc.get("trajectory_format", "")).startswith("mini-swe-agent") or (
                isinstance(doc.get("info"), dict) and "mini_version" in doc["info"]):
            return "mini-swe-agent"
        if isinstance(doc.get("trajectory"), list) and ("history" in doc or "info" in doc):
            return "SWE-agent"
        doc = doc.get("history") if isinstance(doc.get("history"), list) else None
    if isinstance(doc, list):
        events = [e for e in doc[:20] if isinstance(e, dict)]
        acts = ["action" in e or "observation" in e for e in events]
        if events and any(acts) and all("source" in e and (act or "message" in e) for e, act in zip(events, acts)):
            return "OpenHands"
    return None


# -- a conversation's key, for the baseline ----------------------------------------------

SESSION_ID = Lazy(r"[A-Za-z0-9._-]{1,100}")


def session_id(record: dict[str, Any], fmt: str) -> str | None:
    """The session id a Codex, Claude Code or Gemini CLI record names."""
    if fmt == "codex":
        payload = record.get("payload") if record.get("type") == "session_meta" else record
        value = payload.get("id") if isinstance(payload, dict) else None
    else:
        value = record.get("sessionId")
    return value if isinstance(value, str) else None


def conversation_key(path: str, fmt: str, records: Iterable[Any], root: str) -> str | None:
    """A transcript's name in the baseline: its session id (with the file's name, for a
    copy or a fork), else its path; None for standard input, never baselined."""
    if path == "-":
        return None
    stem = os.path.basename(path).rsplit(".", 1)[0]
    for record in records if fmt in ("claude", "codex", "gemini") else ():
        session = session_id(record, fmt) if isinstance(record, dict) else None
        if session and SESSION_ID.fullmatch(session):
            named = stem == session or stem.endswith("-" + session)
            return f"{fmt}:{session}" + ("" if named else f"/{urllib.parse.quote(stem)}")
    return file_key(path, root)


def inside(path: Any, root: str) -> bool:
    if not isinstance(path, str) or not path:
        return False
    path = os.path.normpath(path)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def home_display(path: str) -> str:
    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home):]
    return path


def file_key(path: str, root: str) -> str:
    """The key of a transcript with no session id: its real path, relative to the root."""
    real = os.path.realpath(path)
    shown = os.path.relpath(real, root) if inside(real, root) else home_display(real)
    return "file:" + urllib.parse.quote(shown.replace(os.sep, "/"), safe="/~._-")


def locate(pos: Position, path: str, fmt: str, records: Iterable[Any], opts: Options) -> None:
    pos.key = conversation_key(path, fmt, records, opts.root)
    pos.skip = (opts.baseline or {}).get(pos.key or "", 0)


Judged = list[tuple[int, str, Verdict]]  # (sentence number, sentence, verdict) of one message


def process_file(index: int, path: str, opts: Options, walked: bool = False) -> FileResult:
    """Everything that can be done for one transcript without the others. The assistant's
    turn is held until the next user message, which may be a request pointing back at it."""
    stats: Counter[str] = Counter()
    explain: list[tuple[tuple[int, int, int, int], str]] = []
    candidates: list[Candidate] = []
    writes: list[tuple[str, MemoryWrite]] = []
    signal = build_rules(SIGNAL, opts.extra_signal, "signal")
    noise = build_rules(NOISE, opts.extra_noise, "noise")

    def emit(sequence: int, message: Message, judged: Judged | None) -> None:
        for number, sentence, verdict in judged or []:
            order = (index, message.line, sequence, number)
            if verdict.stage == "candidate":
                candidates.append(Candidate(
                    verdict.text, normalize(verdict.text), message.role, path, message.line, message.timestamp,
                    verdict.reason, verdict.score, order, message.conversation or path, verdict.request))
            elif opts.explain:
                shown = verdict.text or shown_text(sentence, verdict, opts)
                explain.append((order, explain_line(verdict.stage, verdict.reason, path,
                                                    message.line, message.role, shown)))

    turn: list[tuple[int, Message, Judged | None]] = []
    pos = Position() if opts.baseline is not None else None
    try:
        if path == "-" and sys.stdin is None:
            raise UserError("-", "standard input is closed")
        stream = sys.stdin.buffer if path == "-" else open(path, "rb", READ_BUFFER)
        with stream if path != "-" else contextlib.nullcontext():
            records = read_transcript(path, stream, opts, stats, pos)[1]
            records = count_scripts(records, stats) if opts.count_all else records
            for sequence, item in enumerate(records):
                if isinstance(item, MemoryWrite):
                    writes.append((path, item))
                    continue
                judged = judge_message(item, opts, signal, noise, stats) if item.judged else None
                if item.role == "assistant":
                    turn.append((sequence, item, judged))
                    continue
                here = f"{path}:{item.line}"
                if nodded(item.text) and not any(v.asks for _, _, v in judged or []) \
                        and offer_in(turn, opts, signal, noise):
                    judged = consented(item, judged, stats)
                judged = [(n, s, v._replace(request=here) if v.asks == "content" else v) for n, s, v in judged or []]
                turn.append((sequence, item, judged))
                if any(v.asks == "points" for _, _, v in judged):
                    turn = pull_in(turn, here, opts, signal, noise, stats)
                for entry in turn:
                    emit(*entry)
                turn = []
    except OSError as exc:
        raise UserError(path, exc.strerror or str(exc)) from None
    except UserError:
        if not walked:
            raise
        return FileResult([], Counter({"skipped_files": 1}), [])
    for entry in turn:
        emit(*entry)
    return FileResult(candidates, stats, explain, writes, *((pos.key, pos.through) if pos else ()))


def process_notes(index: int, path: str, source: str, opts: Options) -> FileResult:
    """The notes of one agent-memory file as candidates: a model already chose them, so
    they skip SIGNAL and the minimum score, but not the gates, NOISE or length."""
    stats: Counter[str] = Counter()
    explain: list[tuple[tuple[int, int, int, int], str]] = []
    candidates: list[Candidate] = []
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except OSError as exc:
        raise UserError(path, exc.strerror or str(exc)) from None
    noise = build_rules(NOISE, opts.extra_noise, "noise")
    stats["note_files"] += 1
    for number, note in enumerate(read_notes(text, source, stats)):
        role = note.declared if note.declared in NOTE_TYPES else NOTE_DEFAULT_TYPE
        order = (index, note.line, number, 0)
        if role == "user" and not opts.include_user_notes:
            stats.update(prose=-1, skipped_role=1)
            if opts.explain:
                explain.append((order, explain_line("skipped_role", "user note", path, note.line, role,
                                                    "<not read: a note about the person>")))
            continue
        stats.update(messages=1, sentences=1)
        cleaned, removed = clean_invisible(note.text)
        stats["cleaned_invisible"] += removed
        cleaned = mask_secrets(strip_emphasis(cleaned), stats)
        if not opts.allow_pii and HOME_HINT.search(cleaned):
            cleaned, homes = HOME_PATH.subn("~", cleaned)
            stats["rewritten_home_path"] += homes
        # Judged as a note, not as a person's words: "from now on, you" is injection here.
        verdict = judge(cleaned, "note", opts, SIGNAL, noise, None, asked=True)
        stats["signal"] += verdict.stage in PAST_SIGNAL
        kind = "note" if note.declared in NOTE_TYPES else "note-untyped"
        if verdict.stage == "candidate":
            candidates.append(Candidate(verdict.text, normalize(verdict.text), role, path, note.line, None, kind,
                                        verdict.score, order, path, source=source))
            continue
        stats[verdict.stage] += 1
        if opts.explain:
            shown = verdict.text or shown_text(cleaned, verdict, opts)
            explain.append((order, explain_line(verdict.stage, verdict.reason, path, note.line, role, shown)))
    return FileResult(candidates, stats, explain)


def offer_in(turn: list[tuple[int, Message, Judged | None]], opts: Options, signal: re.Pattern[str],
             noise: re.Pattern[str]) -> bool:
    """Whether the agent's last message in the turn offers to record something (offered)."""
    said = [message for _, message, _ in turn if message.role == "assistant"][-1:]
    said = [message for message in said  # a request's word first, as offered reads them
            if any(word in message.text.lower() for word in REQUEST_WORDS)]
    return any(offered(sentence) is not None for message in said
               for _, sentence, _ in judge_message(message, opts, signal, noise, Counter(),
                                                   asked=True) or [])


def consented(message: Message, judged: Judged | None, stats: Counter[str]) -> Judged:
    """A nod to the agent's offer: a request pointing back at it, counted as one."""
    nod = Verdict("dropped_noise", "memory-request consent", message.text.strip(), 0, "points")
    stats.update(memory_requests=1, signal=1, dropped_noise=1)
    if not judged:  # not split: nothing counted its sentence
        stats["sentences"] += 1
        return [(0, message.text, nod)]
    number, sentence, verdict = judged[0]
    stats[verdict.stage] -= 1
    stats["signal"] -= verdict.stage in PAST_SIGNAL
    return [(number, sentence, nod)] + judged[1:]


def pull_in(turn: list[tuple[int, Message, Judged | None]], here: str, opts: Options, signal: re.Pattern[str],
            noise: re.Pattern[str], stats: Counter[str]) -> list[tuple[int, Message, Judged | None]]:
    """A request pointing back: the REQUEST_PULL best statements before it, without SIGNAL."""
    offers = []
    for at, (sequence, message, judged) in enumerate(turn):
        had = {number: verdict for number, _, verdict in judged or []}
        for number, sentence, verdict in judge_message(message, opts, signal, noise, Counter(), asked=True) or []:
            before = had.get(number)
            offer = offered(sentence) if message.role == "assistant" else None
            if offer:  # the agent's offer says what to record: that, first
                verdict = judge(offer, message.role, opts, signal, noise, None, asked=True,
                                requested=True)
                rank = 0
            else:
                rank = 1 if message.role == "user" else 2
            # ... not one scoped to this task ("このタスクの間だけ, X. それだけ覚えておいて").
            fresh = before is None or before.asks == ""
            if verdict.stage == "candidate" and verdict.asks == "" and fresh \
                    and not THIS_TASK.search(sentence.lower()):
                offers.append((rank, -verdict.score, sequence, number, at, sentence, verdict))
    out = [(sequence, message, list(judged or [])) for sequence, message, judged in turn]
    if any(rank == 0 for rank, *_ in offers):  # an offer that says what to record: that alone
        offers = [offer for offer in offers if offer[0] == 0]
    elif any(offer[4] == len(turn) - 1 for offer in offers):  # the request's own message: that
        offers = [offer for offer in offers if offer[4] == len(turn) - 1]
    for _, _, _, number, at, sentence, verdict in sorted(offers)[:REQUEST_PULL]:
        sequence, message, judged = out[at]
        pulled = (number, sentence, verdict._replace(asks="pulled", request=here))
        before = next((v for n, _, v in judged if n == number), None)
        if before is None:  # a message not split (nothing counted it) or set aside by --roles
            stats["sentences"] += 1
        elif before.stage != "candidate":
            stats[before.stage] -= 1
        if before is None or before.stage not in PAST_SIGNAL:
            stats["signal"] += 1
        if before is None or before.stage != "candidate":
            stats["requested"] += 1
        out[at] = (sequence, message, [entry for entry in judged if entry[0] != number] + [pulled])
    return out


# Checkpoint copies and resumed sessions repeat whole messages: each is judged once a build
# and counted per copy. A message under JUDGED_LEAST characters is quicker to judge again.
_JUDGED: dict[tuple[Any, ...], tuple[Judged | None, Counter[str]]] | None = None
JUDGED_MEMO = 50_000
JUDGED_LEAST = 250


def judge_message(message: Message, opts: Options, signal: re.Pattern[str], noise: re.Pattern[str],
                  stats: Counter[str], asked: bool = False) -> Judged | None:
    """Each sentence of one message with its verdict, counted; None when it was not split."""
    memo = _JUDGED
    if memo is None or not JUDGED_MEMO or len(message.text) < JUDGED_LEAST:
        return _judge_message(message, opts, signal, noise, stats, asked)
    key = (message.text, message.role, asked, signal, noise, opts.allow_pii, opts.count_all, opts.explain)
    known = memo.get(key)
    if known is None:
        counts: Counter[str] = Counter()
        known = _judge_message(message, opts, signal, noise, counts, asked), counts
        if len(memo) >= JUDGED_MEMO:
            memo.clear()
        memo[key] = known
    judged, counted = known
    stats.update(counted)
    return None if judged is None else list(judged)


def _judge_message(message: Message, opts: Options, signal: re.Pattern[str], noise: re.Pattern[str],
                   stats: Counter[str], asked: bool) -> Judged | None:
    """judge_message's work. The whole message is cleaned and its secrets withheld before
    splitting, so a credential hidden by a zero-width space or spanning lines is found."""
    stats["messages"] += 1
    text, removed = clean_invisible(message.text)
    stats["cleaned_invisible"] += removed
    text = strip_emphasis(text).replace(SECRET_MARK, "").replace(RANDOM_MARK, "")
    # Without `*`: a phrase may form across bold markers. Extra SIGNAL patterns match all.
    def looks(text: str) -> tuple[list[str] | None, bool, bool]:  # phrases, requests, idle
        lowered = text.lower().replace("*", "")
        phrases = signal_phrases(lowered) if signal is SIGNAL else None
        requests = message.role == "user" and not asked and any(word in lowered for word in REQUEST_WORDS)
        return phrases, requests, phrases == [] and not requests and not asked and not opts.explain

    # Idle: no sentence can match SIGNAL, ask, or be explained. Unless its sentences are to
    # be counted, it is not split nor scanned (withholding only removes phrases).
    phrases, requests, idle = looks(text)
    if idle and not opts.count_all:
        return None
    masked = mask_secrets(text, stats)
    if masked is not text:  # a withheld value may have held a phrase or a request word
        text = masked
        phrases, requests, idle = looks(text)
    if not opts.allow_pii and HOME_HINT.search(text):
        text, homes = HOME_PATH.subn("~", text)
        stats["rewritten_home_path"] += homes
    sentences = split_sentences(text)
    stats["sentences"] += len(sentences)
    if idle:  # each sentence's verdict without judging it (pull_in moves its count)
        stats["dropped_no_signal"] += len(sentences)
        return [(number, sentence, NO_SIGNAL) for number, sentence in enumerate(sentences)]
    lines = [line for _, line in unfenced(LINE_BREAK.split(text))] if requests else []
    spoken = "\n".join(strip_emphasis(line) for line in lines if not PLAN_LINE.match(line))
    listed = "\n".join(strip_emphasis(line) for line in lines if PLAN_LINE.match(line))
    judged = []
    for number, sentence in enumerate(sentences):
        said = requests and (sentence in spoken or sentence in listed)
        request = memory_request(sentence.strip()) if said else None
        if request and not request[1] and sentence not in spoken:
            request = None  # a list's item is a step of a plan, unless it states its rule
        if request and request[1]:
            stats["memory_requests"] += 1
            verdict = judge(request[1], message.role, opts, signal, noise, None, asked=True,
                            requested=True)
            verdict = verdict._replace(asks="content", reason=request[0] if verdict.stage == "candidate"
                                       else verdict.reason)
        elif request:
            stats["memory_requests"] += 1
            verdict = Verdict("dropped_noise", f"memory-request {request[0]}", sentence.strip(), 0, "points")
        elif requests and refused(sentence.strip()):
            verdict = Verdict("dropped_noise", "memory-request refused", sentence.strip(), 0)
        else:
            verdict = judge(sentence, message.role, opts, signal, noise, phrases, asked)
        stats["signal"] += verdict.stage in PAST_SIGNAL
        if verdict.stage != "candidate":
            stats[verdict.stage] += 1
        judged.append((number, sentence, verdict))
    return judged


def signal_phrases(lowered: str) -> list[str]:
    """The SIGNAL phrases in a lower-cased message: most hold none and are not split."""
    return [p for p in (ASCII_PHRASES if lowered.isascii() else SIGNAL_PHRASES) if p in lowered]


def shown_text(sentence: str, verdict: Verdict, opts: Options) -> str:
    """What --explain may print of a dropped sentence: nothing a gate would withhold."""
    if SECRET_MARK in sentence or RANDOM_MARK in sentence:
        return f"<withheld: {'secret' if SECRET_MARK in sentence else 'random-looking token'}>"
    if verdict.stage == "dropped_no_signal":
        text = sentence.strip()
        gated = gate(text, opts)
        if gated is None or gated.stage == "dropped_structure":
            return text
        verdict = gated
    return f"<withheld: {verdict.reason}>"


def explain_line(stage: str, reason: str, path: str, line: int, role: str, text: str) -> str:
    """One --explain row. Its text withholds what the patch withholds (one_line)."""
    label = f"{stage}({reason})" if reason else stage
    return f"{label}\t{one_line(path)}:{line}\t{role}\t{one_line(text)}"


def build_rules(compiled: re.Pattern[str], extra: tuple[str, ...], name: str) -> re.Pattern[str]:
    """The built-in rules extended (never replaced) by a team's case-insensitive patterns."""
    if not extra:
        return compiled
    return re.compile(compiled.pattern + "".join(f"|(?P<{name}_extra__{i}>(?i:{p}))" for i, p in enumerate(extra, 1)))


# == Across transcripts: dedupe, drop what memory holds, cap (pure). ===================

# -- likeness: near-duplicates and contradictions, for grouping and the review flags ---

# Trigram overlap (Jaccard) of a rewording; characters, not words, so it works for Chinese.
NEAR_DUPLICATE = 0.6
# Overlap flagging a flip of polarity (never, 不要) as a contradiction: the flip changes words.
CONTRADICTION = 0.4
# Candidates sharing SAME_CODE code spans say one thing already at CONTRADICTION's overlap.
SAME_CODE = 2
NEGATION = Lazy(r"(?i)\b(?:not|never|no|don't|doesn't|dont|mustn't|shouldn't|can't|cannot|won't|"
                r"without|avoid)\b|不要|不必|不能|不得|禁止|别|没有|不需要|永不|不")
ALWAYS = Lazy(r"(?i)\balways\b|总是|始终|必须|一定")
WORD = Lazy(r"\w+")
# At most RELATED lines a proposal, from POSTINGS_BUDGET entries: a huge file stays bounded.
RELATED = 50
POSTINGS_BUDGET = 200_000


def trigrams(key: str) -> set[str]:
    text = f"  {key} "
    return set(map("".join, zip(text, text[1:], text[2:])))


def jaccard(a: set[str], b: set[str]) -> float:
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)  # the union, not built


def polarity(text: str) -> tuple[int, int]:
    """Counts of negations and "always" markers: a flip changes one, past a shared negation."""
    return len(NEGATION.findall(text)), len(ALWAYS.findall(text))


class MemoryIndex:
    """Lines by word (CJK by character): a proposal meets only the lines sharing words."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.postings: dict[str, list[int]] = {}
        for number, line in enumerate(lines):
            for token in set(_tokens(line)):
                self.postings.setdefault(token, []).append(number)

    def measures(self, line: int) -> tuple[set[str], tuple[int, int]]:
        """A line's trigrams and polarity."""
        key = normalize(self.lines[line])
        return trigrams(key), polarity(key)

    def related(self, key: str) -> list[int]:
        """The RELATED lines sharing most words (two at least) with `key`, rarest words first."""
        hits: Counter[int] = Counter()
        budget = POSTINGS_BUDGET
        for token in sorted(set(_tokens(key)), key=lambda t: (len(self.postings.get(t, ())), t)):
            postings = self.postings.get(token, [])
            if len(postings) > budget:
                break
            budget -= len(postings)
            hits.update(postings)
        found = [(n, count) for n, count in hits.items() if count >= 2]
        found = heapq.nlargest(RELATED, found, key=lambda found: (found[1], -found[0]))
        return sorted(n for n, _ in found)


def _tokens(text: str) -> list[str]:
    if text.isascii():
        return [w for w in WORD.findall(text.lower()) if len(w) > 2]
    words = WORD.findall(text.casefold())
    return [w for w in words if len(w) > 2 or not w.isascii()] + \
           [c for w in words if not w.isascii() for c in w if unicodedata.east_asian_width(c) == "W"]


def select(candidates: list[Candidate], known: set[str], seen: set[str], rejected: list[str], max_add: int,
           min_score: int, stats: Counter[str]) -> tuple[list[Candidate], list[tuple[Candidate, str, str]]]:
    """One proposal a finding, raised by the conversations that said it, less what memory,
    the seen file or a rejection holds, the weak and the over-cap; and the drops."""
    dropped: list[tuple[Candidate, str, str]] = []
    live = []
    noted: set[int] = set()  # findings an agent's memory note holds: no minimum score, ranked second
    for group in findings(candidates, min_score):
        # Notes add no evidence. The user's words come first, then a note's, the assistant's.
        said = max(1, len({c.conversation for c in group if not c.source}))
        best = min(group, key=lambda c: (c.role != "user" or bool(c.source), not c.source, -c.score, c.order))
        request = best.request or next((c.request for c in group if c.request), "")
        other = next((c for c in group if bool(c.source) != bool(best.source)), None)
        also = "" if other is None else \
            f"{other.file} ({other.role} note)" if other.source else f"{other.file}:{other.line} ({other.role})"
        live.append(best._replace(score=best.score + EVIDENCE_POINTS * min(said - 1, EVIDENCE_MAX),
                                  request=request, said_in=said, also=also))
        if any(c.source for c in group):
            noted.add(id(live[-1]))
        dropped += [(c, "dropped_duplicate", "") for c in group if c is not best]
    refused = MemoryIndex(rejected)
    kept: list[Candidate] = []
    for cand in sorted(live, key=lambda c: c.order):
        stage, detail = "", ""
        rule = note_rule(cand)  # a note, with or without its reason
        if cand.key in known or rule in known:
            stage = "already_in_memory"
        elif cand.key in seen or rule in seen:
            stage = "already_seen"
        elif rejected and (line := near_duplicate(cand.key, refused)) is not None:
            stage, detail = "already_rejected", f"rejected before: {rejected[line].strip()}"
        elif cand.score < min_score and not cand.request and id(cand) not in noted:
            stage = "dropped_weak"
        if stage:
            dropped.append((cand, stage, detail))
        else:
            kept.append(cand)
    if len(kept) > max_add:
        # What a request asked for first, then a memory note, then the strongest.
        ranked = sorted(kept, key=lambda c: (not c.request, id(c) not in noted, -c.score, c.order))
        winners = {id(c) for c in ranked[:max_add]}
        dropped += [(c, "dropped_over_cap", "") for c in kept if id(c) not in winners]
        kept = [c for c in kept if id(c) in winners]
    stats.update(stage for _, stage, _ in dropped)
    stats["proposed"] += len(kept)
    return kept, dropped


def finding_key(key: str) -> str:
    """What two candidates must share to say the same thing (no backticks or emphasis)."""
    return key.replace("`", "").replace("*", "").replace("_", " ").strip()


def note_rule(cand: Candidate) -> str:
    """The comparison key of what a candidate says: of a note, without its `Why:`."""
    return normalize(cand.key.split(" why: ")[0]) if cand.source else cand.key


def findings(candidates: list[Candidate], min_score: int) -> list[list[Candidate]]:
    """The candidates grouped by finding key or near-duplicates, chained. Two weak wordings
    are not compared: that costs more than the rare finding said only weakly is worth."""
    ordered = sorted(candidates, key=lambda c: c.order)
    parent = list(range(len(ordered)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}  # each key's first candidate, which stands for it
    for i, cand in enumerate(ordered):
        parent[i] = first.setdefault(finding_key(note_rule(cand)), i)
    # Sorted by key, so which lines a RELATED cut compares is told by the keys alone.
    lines = sorted(key for key, i in first.items() if ordered[i].request or ordered[i].source
                   or ordered[i].score + EVIDENCE_POINTS >= min_score)
    stand = [ordered[first[key]] for key in lines]
    looks = [c.score >= min_score or bool(c.request or c.source) for c in stand]
    for a, b in near_duplicates(lines, looks, [c.text for c in stand]):
        parent[root(first[lines[b]])] = root(first[lines[a]])
    notes = [key for key, c in zip(lines, stand) if c.source]
    if notes:
        hopeful, noted = set(lines), MemoryIndex(notes)
        their = [(trigrams(key), polarity(key)) for key in notes]
        for key, i in first.items():
            if key in hopeful:
                continue
            mine, sign = trigrams(key), polarity(key)
            for b in noted.related(key):
                if their[b][1] == sign and jaccard(mine, their[b][0]) >= NEAR_DUPLICATE:
                    parent[root(i)] = root(first[notes[b]])
    groups: dict[int, list[Candidate]] = {}
    for i, cand in enumerate(ordered):
        groups.setdefault(root(i), []).append(cand)
    return sorted(groups.values(), key=lambda g: g[0].order)


def near_duplicates(lines: list[str], looks: list[bool], texts: list[str]) -> Iterator[tuple[int, int]]:
    """(a, b) for each line a that `looks` and each related line b that says the same."""
    index = MemoryIndex(lines)

    @functools.cache  # a line is measured once however many lines it meets
    def measure(a: int) -> tuple[tuple[int, int], set[str], frozenset[str]]:
        return polarity(lines[a]), trigrams(lines[a]), frozenset(CODE_SPAN.findall(texts[a]))

    for a, key in enumerate(lines):
        if not looks[a]:
            continue
        sign, grams, spans = measure(a)
        for b in index.related(key):
            other_sign, other_grams, other_spans = measure(b)
            if b == a or other_sign != sign:
                continue
            need = CONTRADICTION if len(spans & other_spans) >= SAME_CODE else NEAR_DUPLICATE
            # Jaccard is at most the smaller set's share of the larger: a cheap test first.
            small, large = sorted((len(grams), len(other_grams)))
            if small >= need * large and jaccard(grams, other_grams) >= need:
                yield a, b


def near_duplicate(key: str, index: MemoryIndex) -> int | None:
    """The index line that `key` near-duplicates (same polarity), or None."""
    best = max((r for r in resemblances(key, index) if r[2] == NEAR_DUPLICATE_OF), key=lambda r: r[0], default=None)
    return best[1] if best else None


NEAR_DUPLICATE_OF, MAY_CONTRADICT = "near-duplicate of", "may contradict"


def resemblances(key: str, index: MemoryIndex) -> Iterator[tuple[float, int, str]]:
    """(overlap, line, kind) of each index line `key` near-duplicates or may contradict."""
    grams, mine = trigrams(key), polarity(key)
    for line_no in index.related(key):
        their_grams, theirs = index.measures(line_no)
        overlap = jaccard(grams, their_grams)
        if overlap >= NEAR_DUPLICATE and mine == theirs:
            yield overlap, line_no, NEAR_DUPLICATE_OF
        elif overlap >= CONTRADICTION and mine != theirs:
            yield overlap, line_no, MAY_CONTRADICT


# -- what the reviewer is told ---------------------------------------------------------

def review_flags(proposed: list[Candidate], index: MemoryIndex, shown: str) -> list[str]:
    """One line for each proposal that repeats or contradicts a memory line."""
    flags = []
    for number, cand in enumerate(proposed, 1):
        best = max(resemblances(cand.key, index), key=lambda r: r[0], default=None)
        if best:
            overlap, line_no, kind = best
            flags.append(f"bullet {number} {kind} {shown}:{line_no + 1} "
                         f"(overlap {overlap:.2f}): {index.lines[line_no].strip()}")
    return flags


def rejected(seen: SeenFile, known: set[str]) -> list[str]:
    """The seen file's bullets the memory file lacks: the reviewer deleted them, so rejected."""
    return [line for line in seen.bullets if normalize(line) not in known]


def write_notes(proposed: list[Candidate], writes: list[tuple[str, MemoryWrite]], memory: str,
                state: tuple[bool, float] | None, changed: dict[str, float]) -> list[str]:
    """What sessions wrote to memory files, and proposals restating it. Only a write that
    may be unreviewed gets its own line: a hook must not open with months of old writes."""
    if state is None:
        shown, rest = (writes, []) if len(writes) == 1 else ([], writes)
    else:
        differs, last = state
        shown, rest = [], []
        for path, w in writes:
            newer = w.target == memory and changed[path] > last
            (shown if newer or differs and not last else rest).append((path, w))
    notes = [f"this session wrote {len(w.added)} line{'s' if len(w.added) != 1 else ''} to {w.target} at "
             f"{home_display(path)}:{w.line}, unreviewed: see git diff" for path, w in shown]
    if rest:
        lines = sum(len(w.added) for _, w in rest)
        targets = ", ".join(sorted({w.target for _, w in rest}))
        sessions = len({path for path, _ in rest})
        notes.append(f"{len(rest)} write{'s' if len(rest) != 1 else ''} of {lines} line{'s' if lines != 1 else ''} "
                     f"to {targets} by {sessions} session{'s' if sessions != 1 else ''} "
                     + (f"made before {memory}'s last commit: see git log" if state is not None
                        else "(git cannot tell which are reviewed: see git log and git diff)"))
    lines = [(path, w, text) for path, w in writes for text in w.added]
    index = MemoryIndex([text for _, _, text in lines])
    for number, cand in enumerate(proposed, 1):
        if (found := near_duplicate(cand.key, index)) is not None:
            path, write, text = lines[found]
            notes.append(f"bullet {number} near-duplicate of what {home_display(path)}:{write.line} wrote to "
                         f"{write.target}: {text.strip()}")
    return notes


def budget_warnings(after_patch: bytes, shown: str, path: str) -> list[str]:
    """Where the patch would push the memory file past what agents load (see agent_budgets)."""
    out = []
    for agent, unit, limit, before in agent_budgets(path):
        limit = max(0, limit - before)
        after = len(after_patch.decode("utf-8", "replace")) if unit == "chars" else len(after_patch)
        if after > limit:
            out.append(f"warning: with this patch {shown} is {after:,} {unit}; "
                       f"{agent} loads about {limit:,}, the rest is not read")
    return out


def reject_note(shown: str, seen_shown: str | None) -> str:
    """How to reject a bullet: git apply --recount applies the edited patch, patch -p1 cannot."""
    if seen_shown:
        return (f"to reject a bullet: delete its + line in {shown} only ({seen_shown} keeps it, "
                f"recorded as rejected), then apply with git apply --recount")
    return "to reject a bullet: delete its + line, then apply with git apply --recount"


def summary_line(stats: Counter[str], sessions: int) -> str:
    """The first line of the preamble; `sessions` counts every input read, note files too."""
    dropped = stats["signal"] - stats["proposed"]
    notes = stats["note_files"]
    sessions -= notes
    parts = [f"{stats[k]} {label}" for k, label in (
        ("dropped_noise", "noise"), ("dropped_length", "length"), ("dropped_weak", "weak"),
        ("dropped_duplicate", "duplicate"), ("already_in_memory", "already in memory"),
        ("already_seen", "already seen"), ("already_rejected", "rejected before"),
        ("dropped_over_cap", "over the cap")) if stats[k]]
    gated = sum(stats[k] for k in ("dropped_secret", "dropped_pii", "dropped_injection",
                                   "dropped_invisible", "dropped_structure"))
    read = " and ".join(part for part in (
        f"{sessions} session{'s' if sessions != 1 else ''}" if sessions or not notes else "",
        f"{notes} memory note file{'s' if notes != 1 else ''}" if notes else "") if part)
    line = (f"{stats['proposed']} proposed from {read}; "
            f"{dropped} candidate{'s' if dropped != 1 else ''} dropped" + (": " + ", ".join(parts) if parts else ""))
    if gated:
        line += f"; {gated} sentences withheld by the safety gates"
    return line


def render_preamble(proposed: list[Candidate], stats: Counter[str], sessions: int,
                    notes: list[str]) -> bytes:
    """What the reviewer reads before the diff, each line `# ` so git apply skips it."""
    lines = ["memory-diff: " + summary_line(stats, sessions)]
    for number, cand in enumerate(proposed, 1):
        when = f", {cand.timestamp}" if cand.timestamp else ""
        said = f", said in {cand.said_in} conversations" if cand.said_in > 1 else ""
        asked = f"; asked to remember at {home_display(cand.request)}" if cand.request else ""
        asked += f"; also {home_display(cand.also)}" if cand.also else ""
        lines.append(f"  {number}. {home_display(cand.file)}:{cand.line} ({note_label(cand) or cand.role}{when})"
                     f"{said}{asked}")
    lines += notes
    return "".join(f"# {one_line(line)}\n" for line in lines).encode("utf-8", "replace")


def note_label(cand: Candidate) -> str:
    """How provenance names an agent's memory note: its type, or the one it was read as."""
    if not cand.source:
        return ""
    return f"{cand.role} note" + (f", type missing or unknown: read as {NOTE_DEFAULT_TYPE}"
                                  if cand.kind == "note-untyped" else "")


def one_line(text: str) -> str:
    """Text made safe to print on one line, credentials withheld and invisible characters
    escaped, so nothing outside a bullet can start a patch line, hide text or leak."""
    return UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), withhold(text))


def withhold(text: str) -> str:
    """Text with each credential replaced by `<withheld: KIND>`, scanned cleaned so an
    invisible character cannot hide one; a documentation example key is no leak."""
    cleaned = INVISIBLE.sub("", text) if INVISIBLE.search(text) else text
    shown = replace_secrets(cleaned, lambda f: cleaned[f.start:f.end] if f.example else
                            f"<withheld: {'random-looking token' if f.kind == RANDOM_KIND else f.kind}>")
    return text if shown == cleaned else shown


# == The patch (pure): memory bytes and bullets in, unified-diff bytes out. ============

def split_keep_ends(data: bytes) -> list[bytes]:
    """Lines as git sees them: split on \\n only, terminators kept."""
    lines = data.split(b"\n")
    return [ln + b"\n" for ln in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def line_ending(lines: list[bytes]) -> bytes:
    crlf = sum(1 for ln in lines if ln.endswith(b"\r\n"))
    lf = sum(1 for ln in lines if ln.endswith(b"\n")) - crlf
    return b"\r\n" if crlf > lf else b"\n"


HEADING = Lazy(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def heading_key(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(" .:：!?。").strip()


def headings(lines: list[bytes]) -> list[tuple[int, int, str]]:
    """(index, level, title) of the file's Markdown headings, outside fenced code."""
    texts = (raw.decode("utf-8", "replace").rstrip("\r\n").lstrip("\ufeff") for raw in lines)
    return [(index, len(match[1]), match[2]) for index, text in unfenced(texts)
            for match in [HEADING.match(text)] if match]


def find_section(lines: list[bytes], section: str) -> tuple[int, int] | None:
    """(heading index, end index) of a section, its heading matched at any level by heading_key."""
    want = heading_key(section.lstrip("#"))
    found: tuple[int, int] | None = None
    for index, level, title in headings(lines):
        if found is not None and level <= found[1]:
            return found[0], index
        if found is None and heading_key(title) == want:
            found = (index, level)
    return (found[0], len(lines)) if found else None


def insertion(lines: list[bytes], section: str | None, eol: bytes) -> tuple[int, list[bytes], list[bytes]]:
    """Where the bullets go and what surrounds them: (index, lines before, lines after)."""
    blank = lambda ln: not ln.strip(b" \t\r\n")  # noqa: E731 (a BOM line is not blank: it stays)
    where = find_section(lines, section) if section else (-1, len(lines))
    if where is None:  # no such section: a new one at the end of the file
        title = section if section.lstrip().startswith("#") else \
            f"{'#' * section_level(lines)} {section.strip()}"
        space_before, space_after = heading_habits(lines, blank)
        before = [eol] if lines and not blank(lines[-1]) and space_before else []
        after = [eol] if space_after else []
        return len(lines), before + [title.encode("utf-8", "surrogateescape") + eol] + after, []
    head, end = where
    last = end
    while last > head + 1 and blank(lines[last - 1]):
        last -= 1
    if section and last == head + 1 and last < end and blank(lines[last]):
        # An empty section whose heading is followed by a blank line.
        return last + 1, [], [eol] if last + 1 == end and end < len(lines) else []
    return last, [], []


# The default section in a file with sections: its own, not the end of whichever comes last.
DEFAULT_SECTION = "Learned"


def sections(lines: list[bytes]) -> list[tuple[int, int, str]]:
    """The file's headings but its title (a first level-1 heading with no other after it)."""
    found = headings(lines)
    if found and found[0][1] == 1 and all(level > 1 for _, level, _ in found[1:]):
        return found[1:]
    return found


def section_level(lines: list[bytes]) -> int:
    return min((level for _, level, _ in sections(lines)), default=2)


def default_section(current: bytes | None) -> str | None:
    return DEFAULT_SECTION if current and sections(split_keep_ends(current)) else None


def heading_habits(lines: list[bytes], blank: Any) -> tuple[bool, bool]:
    """Whether most headings have a blank line before, and after (without headings: both)."""
    indexes = [index for index, _, _ in headings(lines)]
    before = [blank(lines[i - 1]) for i in indexes if i > 0]
    after = [blank(lines[i + 1]) for i in indexes if i + 1 < len(lines)]
    return (sum(before) * 2 >= len(before)), (sum(after) * 2 >= len(after))


def plan(current: bytes | None, bullets: list[str], section: str | None,
         marker: str = "- ") -> tuple[list[bytes], int, list[bytes], bytes]:
    """The file's lines, where the new lines go, the new lines, and the line ending."""
    lines = split_keep_ends(current or b"")
    eol = line_ending(lines) if lines else b"\n"
    at, before, after = insertion(lines, section, eol)
    added = before + [f"{marker}{b}".encode("utf-8", "surrogatepass") + eol for b in bullets] + after
    return lines, at, added, eol


def patched(current: bytes | None, bullets: list[str], section: str | None) -> bytes:
    """The memory file as it will be once the patch is applied (for its size)."""
    lines, at, added, eol = plan(current, bullets, section)
    head = b"".join(lines[:at])
    if head and not head.endswith(b"\n"):
        head += eol
    return head + b"".join(added) + b"".join(lines[at:])


def quote_path(path: str) -> str:
    # GNU patch needs a TAB after a name with spaces; git writes one too.
    return path + ("\t" if " " in path else "")


CONTEXT = 3  # lines of context, as diff -u and git write them


def quotable_context(rel: str, lines: list[bytes], at: int) -> tuple[int, int]:
    """Context lines around the insertion point, fewer where a line holds a credential; in the
    middle both sides shrink alike (git apply anchors one-sided short context at an end)."""
    def clean(index: int) -> bool:
        text = lines[index].decode("utf-8", "replace")
        record = BASELINE_RECORD.match(text)  # the seen file's own line: its key names a conversation
        text = f"conversation {record.group(1)} through {record.group(2)}" if record else text
        return not any(not f.example for f in scan_secrets(strip_emphasis(clean_invisible(text)[0])))
    whole_before, whole_after = min(CONTEXT, at), min(CONTEXT, len(lines) - at)
    before = next((n for n in range(whole_before) if not clean(at - 1 - n)), whole_before)
    after = next((n for n in range(whole_after) if not clean(at + n)), whole_after)
    if (before, after) != (whole_before, whole_after) and whole_before and whole_after:
        before = after = min(before, after)
    ends_open = at == len(lines) and at and not lines[at - 1].endswith(b"\n")  # re-emitted whole
    if lines and (not before and not after or ends_open and not clean(at - 1)):
        bad = next(i for i in range(max(0, at - 1), min(len(lines), at + 1)) if not clean(i))
        raise UserError(rel, "holds a credential on a line the patch would quote; remove it "
                             f"first (memory-diff lint {rel})", bad + 1)
    return before, after


def render_file_patch(rel: str, current: bytes | None, bullets: list[str], section: str | None,
                      marker: str = "- ") -> bytes:
    """A unified diff appending `- bullet` lines to one file (`marker` "": lines as they are)."""
    if not bullets:
        return b""
    lines, at, added, eol = plan(current, bullets, section, marker)
    before, after = quotable_context(rel, lines, at)
    old_start = at - before
    ctx_before, ctx_after = lines[old_start:at], lines[at:at + after]
    removed: list[bytes] = []
    if ctx_before and not ctx_before[-1].endswith(b"\n") and not ctx_after:
        # A last line with no newline: git can add after it only by re-emitting it.
        last = ctx_before.pop()
        removed = [b"-" + last + b"\n\\ No newline at end of file\n"]
        added = [last + eol] + added
    body = [b" " + ln for ln in ctx_before] + removed + [b"+" + ln for ln in added]
    body += [b" " + ln for ln in ctx_after]
    if ctx_after and not ctx_after[-1].endswith(b"\n"):
        body[-1] += b"\n\\ No newline at end of file\n"
    span = lambda n: f"{old_start + 1}" if n == 1 else f"{old_start + bool(n)},{n}"  # noqa: E731
    old = span(len(ctx_before) + len(removed) + len(ctx_after))
    new = span(len(ctx_before) + len(added) + len(ctx_after))
    # Without `diff --git`, `git apply --recount` reads the next file's `--- ` as a removed line.
    head = f"diff --git a/{rel} b/{rel}\n" + ("new file mode 100644\n" if current is None else "")
    head += f"--- {'/dev/null' if current is None else quote_path('a/' + rel)}\n+++ {quote_path('b/' + rel)}\n"
    return head.encode("utf-8", "surrogateescape") + f"@@ -{old} +{new} @@\n".encode() + b"".join(body)


# == The I/O edge: files, the repository, discovery, configuration. ====================

def _stat(path: str) -> os.stat_result | None:
    """A file's metadata, or None when there is none: reading the file will say why."""
    try:
        return os.stat(path)
    except OSError:
        return None


def file_head(path: str, size: int) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError:
        return None


def head_records(path: str, lines: int) -> Iterator[dict[str, Any]]:
    """The records of a JSONL file's first lines, parsed lazily (a line can be hundreds of kB)."""
    try:
        with open(path, "rb") as handle:
            for raw in itertools.islice(handle, lines):
                yield from (record for record in parse_jsonl_line(raw) or [] if isinstance(record, dict))
    except OSError:
        return


def cwd_root() -> str:
    """The repository's real root, else the current folder (not cached: main() may move)."""
    return os.path.realpath(repo_root(os.getcwd()) or os.getcwd())


def git_output(folder: str, *args: str, given: bytes = b"", ok: tuple[int, ...] = (0,)) -> bytes | None:
    """What a read-only git command prints (`given` on its standard input), or None where
    git is missing or exits other than `ok`; `git status` takes no optional lock."""
    import subprocess  # here, not at the top: only lint and a build that proposes run git
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(["git", "-C", folder or ".", *args], input=given, capture_output=True, env=env,
                              timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode in ok else None


def memory_git_state(real: str) -> tuple[bool, float] | None:
    """Whether the memory file differs from what git has, and its last commit's time (0.0 when
    it has none); None where git cannot tell (see write_notes)."""
    folder, name = os.path.split(real)
    status = git_output(folder, "status", "--porcelain", "--", name) if real else None
    log = git_output(folder, "log", "-1", "--format=%ct", "--", name) if status is not None else None
    if log is None:
        return None
    stamp = log.decode("ascii", "replace").strip()
    return bool(status.strip()), float(stamp) if stamp.isdigit() else 0.0


def upward(folder: str, top: str | None = None) -> Iterator[str]:
    while True:
        yield folder
        if folder == top or os.path.dirname(folder) == folder:
            return
        folder = os.path.dirname(folder)


def repo_root(start: str) -> str | None:
    """The nearest folder above `start` that holds .git (a folder, or a worktree file)."""
    found = (f for f in upward(os.path.abspath(start)) if os.path.exists(os.path.join(f, ".git")))
    return next(found, None)

# -- the cache: each transcript's result, reused while the file is unchanged -------------
# Anything wrong with the cache means the file is read again: never an error or another answer.

CACHE_FOLDER = "memory-diff"
CACHE_FORMAT = 3
# marshal, not pickle: loading it runs no code; the key holds the Python version.
CACHE_SUFFIX = ".marshal"
FORMER_FILE = Lazy(r".*\.json|[0-9a-f]{64}\.marshal")  # earlier formats, swept away
# git's racy rule: a file changed this close to its reading may change again unseen (FAT: 2 s).
RACY_NS = 2_000_000_000
# Entries unused for CACHE_RUNS runs are dropped; the CACHE_INDEXES newest indexes are kept.
CACHE_RUNS = 8
CACHE_INDEXES = 4
CACHE_GRACE_NS = 60_000_000_000  # a temporary file this new may be another run's


def git_dir(root: str) -> str | None:
    """The `.git` folder at `root`, or the one a worktree's `.git` file names."""
    dot = os.path.join(root, ".git")
    if os.path.isdir(dot):
        return dot
    first = (file_head(dot, 4096) or b"").split(b"\n", 1)[0].strip()
    path = os.path.normpath(os.path.join(root, os.fsdecode(first[7:].strip())))
    return path if first.startswith(b"gitdir:") and os.path.isdir(path) else None


def file_identity(path: str) -> list[int] | None:
    """What tells a file changed: device, inode, size, modification and change times (ns)."""
    st = _stat(path)
    return None if st is None else [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def build_digest() -> str | None:
    """The module's bytes and Python's version: two trees may share __version__."""
    data = file_head(globals().get("__file__") or "", -1)
    tag = f"\0{sys.version}\0{sys.implementation.cache_tag}".encode()
    return None if data is None else hashlib.sha256(data + tag).hexdigest()


def options_key(opts: Options) -> dict[str, Any]:
    """Every option, by name: each one may change a verdict or a counter of a transcript."""
    return {name: sorted(value) if isinstance(value, frozenset) else value
            for name, value in zip(opts._fields, opts)}


def cache_bytes(value: Any) -> bytes:
    data = marshal.dumps(value)
    return hashlib.sha256(data).digest() + data


def cache_value(data: bytes) -> Any:
    """What cache_bytes wrote, or ValueError: marshal may raise anything on hand-made bytes."""
    if hashlib.sha256(data[32:]).digest() != data[:32]:
        raise ValueError("a cache file of other bytes")
    try:
        return marshal.loads(data[32:])
    except Exception as error:
        raise ValueError("a cache file of another shape") from error


def cache_file(path: str) -> bytes:
    """OSError unless a regular file (a FIFO would block); a short read fails the hash."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path}: not a regular file")
        return os.read(fd, info.st_size)
    finally:
        os.close(fd)


def _atomic_write(folder: str, name: str, data: bytes) -> bool:
    """Write a file of the cache whole or not at all (False): the only code that writes."""
    if os.path.basename(folder) != CACHE_FOLDER or os.sep in name or (os.altsep or os.sep) in name:
        return False
    tmp = ""
    try:
        os.makedirs(folder, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(tmp, os.path.join(folder, name))
        return True
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False


def sound_entry(entry: Any) -> bool:
    """An index entry as put writes it, but for the value (checked where it is used)."""
    return type(entry) is list and len(entry) == 6 and type(entry[0]) is str and type(entry[1]) is list \
        and [type(n) for n in entry[1]] == [int] * 5 and type(entry[2]) is int \
        and type(entry[3]) is int and type(entry[4]) in (bool, str)


class CacheIndex:
    """An entry: [absolute path, identity, stamp (when its run began), last run, detail, value]."""

    def __init__(self, folder: str, kind: str, key: dict[str, Any]) -> None:
        self.folder, self.kind = folder, kind
        self.key = json.loads(json.dumps(key, default=repr))  # as it reads back
        self.name = f"{kind}-{hashlib.sha256(json.dumps(self.key, sort_keys=True).encode()).hexdigest()[:24]}{CACHE_SUFFIX}"
        self.stamp = time.time_ns()  # before any file of this run is looked at
        self.run, self.entries, self.used = 1, {}, set()
        try:
            doc = cache_value(cache_file(os.path.join(folder, self.name)))
            if doc["format"] == CACHE_FORMAT and doc["key"] == self.key and type(doc["run"]) is int:
                self.entries = {name: e for name, e in doc["entries"].items() if sound_entry(e)}
                self.run = doc["run"] + 1
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass

    def get(self, name: str, path: str, detail: Any) -> tuple[bool, Any]:
        """(True, value) when the entry is certainly of the file as it is now."""
        entry, ident = self.entries.get(name), file_identity(path)
        if ident is None or entry is None or entry[:2] != [os.path.abspath(path), ident] \
                or entry[4] != detail or ident[3] + RACY_NS > entry[2]:
            return False, None
        self.used.add(name)
        return True, entry[5]

    def put(self, name: str, path: str, ident: list[int], detail: Any, value: Any) -> None:
        self.entries[name] = [os.path.abspath(path), ident, self.stamp, self.run, detail, value]
        self.used.add(name)

    def memo(self, kind: str, path: str, read: Any) -> Any:
        """read(path) (a str or None), from the cache while the file is unchanged."""
        name = f"{kind}\0{os.path.abspath(path)}"
        found, value = self.get(name, path, kind)
        if found and (value is None or type(value) is str):
            return value
        ident = file_identity(path)
        value = read(path)
        if ident is not None and (value is None or type(value) is str) and file_identity(path) == ident:
            self.put(name, path, ident, kind, value)
        return value

    def save(self) -> None:
        """Write the index back without what is stale; sweep now and then."""
        for name in self.used:
            self.entries[name][3] = self.run
        self.entries = {name: entry for name, entry in self.entries.items() if name in self.used
                        or self.run - entry[3] < CACHE_RUNS and os.path.exists(entry[0])}
        doc = {"format": CACHE_FORMAT, "key": self.key, "run": self.run, "entries": self.entries}
        try:
            data = cache_bytes(doc)
        except ValueError:  # a value marshal cannot write: nothing is written
            return
        if _atomic_write(self.folder, self.name, data) and (self.run == 1 or self.run % CACHE_RUNS == 0):
            self.prune()

    def prune(self) -> None:
        """Keep the newest indexes; delete other runs' leftovers once past CACHE_GRACE_NS."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return
        now = time.time_ns()

        def mtime(name: str) -> int:
            return getattr(_stat(os.path.join(self.folder, name)), "st_mtime_ns", now)

        indexes = sorted((n for n in names if n.startswith(f"{self.kind}-") and n.endswith(CACHE_SUFFIX)),
                         key=lambda n: -mtime(n))
        for name in indexes[CACHE_INDEXES:] + [n for n in names if n.startswith(".tmp-") or FORMER_FILE.fullmatch(n)]:
            if name in indexes or now - mtime(name) > CACHE_GRACE_NS:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.folder, name))


def open_cache() -> tuple[str, str] | None:
    """The current repository's cache folder and this build's digest; None outside one."""
    root = repo_root(os.getcwd())
    folder, build = git_dir(root) if root else None, build_digest()
    return None if folder is None or build is None else (os.path.join(folder, CACHE_FOLDER), build)


def no_memo(kind: str, path: str, read: Any) -> Any:
    return read(path)


def plain_result(result: FileResult, path: str) -> Any:
    """A result as plain values, without its index and path; None if the path is ambiguous."""
    shown, here = "\t" + one_line(path) + ":", path + ":"
    rows = []
    for c in result.candidates:
        tail = c.request[len(here):]
        if c.file != path or c.request and not (c.request.startswith(here) and tail.isdecimal()):
            return None
        rows.append([c.text, c.key, c.role, c.line, c.timestamp, c.kind, c.score, *c.order[1:],
                     None if c.conversation == path else c.conversation,
                     int(tail) if c.request else None, c.said_in, c.source, c.also])
    explain = []
    for order, text in result.explain:
        cut = text.find("\t")
        if cut < 0 or not text.startswith(shown, cut):
            return None
        explain.append([list(order[1:]), text[:cut], text[cut + len(shown):]])
    writes = [[write.line, write.target, list(write.added)] for _, write in result.writes]
    return [rows, [list(item) for item in result.stats.items()], explain, writes, result.conversation, result.through]


# Past this a kept number is of no run of this build (past 4,300 digits it cannot print).
CACHE_INT = 1 << 63
# The types each field of a kept candidate may have, in plain_result's order.
KEPT_CANDIDATE: tuple[tuple[type, ...], ...] = (
    (str,), (str,), (str,), (int,), (str, type(None)), (str,), (int,),  # text, key, role, line, timestamp, kind, score
    (int,), (int,), (int,),  # order, without the input index: line, message, sentence
    (str, type(None)), (int, type(None)), (int,), (str,), (str,))  # conversation, request line, said_in, source, also
KEPT_TYPES = frozenset(itertools.product(*KEPT_CANDIDATE))


def _of(value: Any, *kinds: Any) -> Any:
    if type(value) not in kinds or type(value) is int and not -CACHE_INT < value < CACHE_INT:
        raise ValueError("a cache entry of another shape")
    return value


def kept_candidate(row: Any, at: int, path: str) -> Candidate:
    """A candidate plain_result kept, for input `at` read from `path` as given."""
    if type(row) is not list or tuple(map(type, row)) not in KEPT_TYPES:
        raise ValueError("a cache entry of another shape")
    text, key, role, line, stamp, kind, score, line_at, sequence, number, conversation, request, said_in, \
        source, also = row
    # The numbers' bits together: under CACHE_INT only if each number is.
    numbers = abs(line) | abs(score) | abs(line_at) | abs(sequence) | abs(number) | abs(said_in)
    if numbers | abs(request or 0) >= CACHE_INT:
        raise ValueError("a cache entry of another shape")
    return Candidate(text, key, role, path, line, stamp, kind, score, (at, line_at, sequence, number),
                     path if conversation is None else conversation, "" if request is None else f"{path}:{request}",
                     said_in, source, also)


def rebuilt(plain: Any, at: int, path: str, root: str) -> FileResult:
    """ValueError or TypeError when of another shape, or keyed by another path (moved)."""
    rows, stats_in, explain_in, writes_in, conversation_key, through = _of(plain, list)
    candidates = [kept_candidate(row, at, path) for row in _of(rows, list)]
    stats: Counter[str] = Counter(dict(_of(stats_in, list)))  # a name twice is another shape
    sound = all(type(name) is str and type(count) is int and -CACHE_INT < count < CACHE_INT
                for name, count in stats.items())
    if len(stats) != len(stats_in) or not sound:
        raise ValueError("a cache entry of another shape")
    shown = "\t" + one_line(path) + ":" if _of(explain_in, list) else ""  # (--explain's only)
    explain = [((at, *(_of(n, int) for n in _of(order, list))), _of(label, str) + shown + _of(rest, str))
               for order, label, rest in explain_in]
    if any(len(order) != 4 for order, _ in explain):
        raise ValueError("a cache entry of another shape")
    writes = [(path, MemoryWrite(_of(line, int), _of(target, str), tuple(_of(t, str) for t in _of(added, list))))
              for line, target, added in _of(writes_in, list)]
    if type(conversation_key) is str and conversation_key.startswith("file:") and conversation_key != file_key(path, root):
        raise ValueError("a conversation key of another path")
    return FileResult(candidates, stats, explain, writes, _of(conversation_key, str, type(None)), _of(through, int))


# -- every transcript: the process pool, and the cache before it ------------------------

def source_format(path: str) -> str:
    source = "detected on read" if path == "-" else note_source(path)
    if source:
        return source
    try:
        with open(path, "rb") as handle:
            fmt = detect_format(path, read_head(handle))
            if fmt == "document":
                handle.seek(0)
                fmt = sniff_document(_load_document(path, handle.read())) or "unrecognised"
            return f"not read ({fmt})" if fmt in NOT_READ else fmt
    except OSError as exc:
        raise UserError(path, exc.strerror or str(exc)) from None


def process_all(paths: list[str], walked: set[str], opts: Options, jobs: int | None,
                indices: list[int] | None = None) -> list[FileResult]:
    """Results and the first error in input order: the output does not depend on --jobs."""
    workers = min(jobs or os.cpu_count() or 1, len(paths)) if hasattr(os, "fork") else 1
    lenient = [p in walked for p in paths]
    number = indices if indices is not None else list(range(len(paths)))
    if workers <= 1 or "-" in paths:
        return [process_input(i, p, opts, w) for i, p, w in zip(number, paths, lenient)]
    # A conversation's files are one task, so its copies are judged by memory (_JUDGED);
    # the largest go first, so that the workers finish together.
    size = [getattr(_stat(path), "st_size", 0) for path in paths]
    together: dict[Any, list[int]] = {}
    for i in sorted(range(len(paths)), key=lambda i: -size[i]):
        together.setdefault(conversation_id(paths[i]) or i, []).append(i)
    tasks = [[(number[i], paths[i], lenient[i]) for i in files] for files in together.values()]
    import multiprocessing  # here: a run in one process never needs them
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    pool = ProcessPoolExecutor(workers, multiprocessing.get_context("fork"))
    try:
        answers = itertools.chain.from_iterable(pool.map(process_files, tasks, itertools.repeat(opts)))
        done = dict(zip(itertools.chain.from_iterable(together.values()), answers))
    except BrokenProcessPool:  # a worker killed (out of memory, a signal): the run cannot be whole
        raise UserError("", "a worker process ended before it answered; --jobs 1 reads in one process") from None
    finally:
        pool.shutdown(cancel_futures=True)
    results = [done[i] for i in range(len(paths))]
    error = next((r for r in results if isinstance(r, Exception)), None)
    if error:
        raise error
    return results


def process_input(index: int, path: str, opts: Options, walked: bool = False) -> FileResult:
    source = note_source(path)
    return process_notes(index, path, source, opts) if source else process_file(index, path, opts, walked)


def process_files(files: list[tuple[int, str, bool]], opts: Options) -> list[Any]:
    """In a worker: each input's result, or its error for the parent to raise in order."""
    results: list[Any] = []
    for index, path, walked in files:
        try:
            results.append(process_input(index, path, opts, walked))
        except Exception as exc:  # noqa: BLE001 - raised in the parent
            results.append(exc)
    return results


def process_cached(paths: list[str], walked: set[str], opts: Options, jobs: int | None,
                   cache: CacheIndex | None) -> tuple[list[FileResult], int]:
    """process_all, with unchanged transcripts' results from the cache, and how many. A result
    is kept only if the file held still and its bytes rebuild it equal: reuse changes nothing."""
    if cache is None:
        return process_all(paths, walked, opts, jobs), 0
    results: dict[int, FileResult] = {}
    for index, path in ((i, p) for i, p in enumerate(paths) if p != "-"):
        found, plain = cache.get(os.path.abspath(path), path, path in walked)
        if found:
            with contextlib.suppress(ValueError, TypeError):
                results[index] = rebuilt(plain, index, path, opts.root)
    reused = len(results)
    misses = [i for i in range(len(paths)) if i not in results]
    before = {i: file_identity(paths[i]) for i in misses if paths[i] != "-"}
    for index, result in zip(misses, process_all([paths[i] for i in misses], walked, opts, jobs, misses)):
        results[index] = result
        path, ident, plain = paths[index], before.get(index), plain_result(result, paths[index])
        if ident is not None and plain is not None and file_identity(path) == ident:
            with contextlib.suppress(ValueError, TypeError):
                again = rebuilt(cache_value(cache_bytes(plain)), index, path, opts.root)
                if again == result and list(again.stats.items()) == list(result.stats.items()):
                    cache.put(os.path.abspath(path), path, ident, path in walked, plain)
    return [results[i] for i in range(len(paths))], reused


# -- the memory file ----------------------------------------------------------------------

def patch_target(path: str) -> tuple[str, str, str | None]:
    """(real path, header path, folder to apply in if not here); git apply refuses links."""
    real = os.path.realpath(path)
    root = repo_root(os.path.dirname(real))
    if root:
        here = repo_root(os.getcwd())
        same = here is not None and os.path.realpath(here) == os.path.realpath(root)
        return real, os.path.relpath(real, root).replace(os.sep, "/"), None if same else root
    rel = os.path.relpath(real).replace(os.sep, "/")
    if rel.startswith("../"):
        return real, os.path.basename(real), os.path.dirname(real)
    return real, rel, None


def read_memory(real: str, shown: str) -> bytes | None:
    """None when it does not exist; only a regular file (a FIFO would block)."""
    try:
        if not stat.S_ISREG(os.stat(real).st_mode):
            raise UserError(shown, "not a regular file")
        with open(real, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(shown, exc.strerror or str(exc)) from None


# The memory files agents read at a repository's root (of MEMORY_FILE_NAMES).
MEMORY_FILES = ("AGENTS.md", "CLAUDE.md", os.path.join(".claude", "CLAUDE.md"), "GEMINI.md")
# The file each discovered agent reads (the rest read AGENTS.md).
AGENT_FILE = {agent: name for name, agent in reversed(MEMORY_FILE_NAMES.items())}  # each agent's first
ONLY_IMPORT = Lazy(r"@([^\s@]+)")
HTML_COMMENT = Lazy(r"<!--.*?-->", re.S)


def default_memory(root: str, tools: set[str]) -> str:
    """The root's memory file (a link or import: its target), else the agent's own."""
    found: dict[str, list[str]] = {}
    for name in MEMORY_FILES:
        path = os.path.join(root, name)
        if os.path.isfile(path):
            found.setdefault(imported(path) or os.path.realpath(path), []).append(name.replace(os.sep, "/"))
    if len(found) > 1:
        names = ", ".join(", ".join(names) for names in found.values())
        raise UserError("", f"several memory files at the repository root ({names}): choose one with "
                            f"--memory PATH, or memory = \"PATH\" in .memory-diff.toml")
    if found:
        return next(iter(found))
    return os.path.join(root, AGENT_FILE.get(next(iter(tools)), "AGENTS.md") if len(tools) == 1 else "AGENTS.md")


def imported(path: str) -> str | None:
    """The file a memory file only imports: all it holds, comments aside, is `@path`."""
    data = file_head(path, 4096) or b""
    text = HTML_COMMENT.sub("", data.decode("utf-8", "replace").lstrip("\ufeff"))
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    only = ONLY_IMPORT.fullmatch(lines[0]) if len(lines) == 1 else None
    if only is None or only.group(1).startswith(("~", "/")):
        return None
    target = os.path.join(os.path.dirname(path), only.group(1))
    return os.path.realpath(target) if os.path.isfile(target) else None


def memory_keys(data: bytes | None) -> set[str]:
    text = (data or b"").decode("utf-8", "replace").lstrip("\ufeff")
    return {normalize(line) for line in text.split("\n") if line.strip()}


# -- the seen file: bullets already shown, and the baseline -------------------------------

# A baseline record in the seen file: an HTML comment, as a `- ` bullet would read as rejected.
BASELINE_RECORD = Lazy(r"^<!-- memory-diff baseline: (\S+) through (\d+) -->\s*$")
# The seen file when none is named, used once it exists (build --baseline creates it).
DEFAULT_SEEN = ".memory-diff-seen.md"


class SeenFile(NamedTuple):
    shown: set[str]           # the normalised keys of its other lines: the bullets shown
    baseline: dict[str, int]  # conversation key -> the last record a baseline reviewed
    bullets: list[str] = []   # its `- ` lines as written (see rejected)


def read_seen(data: bytes | None) -> SeenFile:
    """The seen file's lines and baseline records (the furthest point of a conversation)."""
    seen = SeenFile(set(), {}, [])
    for line in (data or b"").decode("utf-8", "replace").lstrip("\ufeff").split("\n"):
        record = BASELINE_RECORD.match(line)
        if record:
            key, through = record.groups()
            seen.baseline[key] = max(seen.baseline.get(key, 0), int(through))
        elif line.strip():
            seen.shown.add(normalize(line))
            if BULLET.match(line):
                seen.bullets.append(line)
    return seen


def baseline_record(key: str, through: int) -> str:
    return f"<!-- memory-diff baseline: {key} through {through} -->"


# -- inputs and discovery: which transcripts are read ------------------------------------

def expand_inputs(paths: list[str], strict: bool = True) -> tuple[list[str], set[str]]:
    """Files as given and folders' transcripts sorted, and the set of those found in a folder
    (there a file that is no transcript is passed over, where one named outright is an error)."""
    out: list[str] = []
    walked: set[str] = set()

    def unreadable(exc: OSError) -> None:
        if strict:
            raise UserError(exc.filename or path, f"cannot read the folder: {exc.strerror or exc}")

    for path in paths:
        if path != "-" and os.path.isdir(path):
            for folder, dirs, files in os.walk(path, onerror=unreadable):
                dirs.sort()
                found = [os.path.join(folder, f) for f in sorted(files)
                         if f.endswith((".jsonl", ".json")) and not f.endswith(".meta.json")
                         or f.endswith(".md") and (note_source(os.path.join(folder, f))
                                                   or _looks_like_history(os.path.join(folder, f)))]
                out += found
                walked.update(found)
        elif path != "-" and not os.path.exists(path):
            raise UserError(path, "no such file or directory")
        else:
            out.append(path)
    if out.count("-") > 1:
        raise UserError("-", "standard input can be read only once")
    return out, walked


def _looks_like_history(path: str) -> bool:
    """Whether a Markdown file opens as an Aider or a SpecStory history (not a README.md)."""
    start = (file_head(path, 64) or b"").lstrip(b"\xef\xbb\xbf").lstrip()
    return start.startswith(AIDER_STARTS) or start.startswith(SPECSTORY_MARK)


def note_source(path: str) -> str | None:
    """The kind of agent memory a Markdown file is, by its folder; None for a history."""
    if path == "-" or not path.endswith(".md") or _looks_like_history(path):
        return None
    folder = os.path.dirname(os.path.abspath(path))
    names = _folder_names(folder)
    if os.path.basename(folder) == "memories" and names & {"memory_summary.md", "rollout_summaries", "raw_memories.md"}:
        return "codex-memory" if os.path.basename(path) == NOTE_INDEX else None
    projects = os.path.basename(os.path.dirname(os.path.dirname(folder)))
    if NOTE_INDEX in names or os.path.basename(folder) == "memory" and projects == "projects":
        return "claude-auto-memory"
    return None


@functools.lru_cache(maxsize=64)
def _folder_names(folder: str) -> frozenset[str]:
    """A folder's names, listed once for all its Markdown files (a SpecStory folder holds
    thousands)."""
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


# Claude Code names a project folder by its path, each UTF-16 unit that is not an ASCII
# letter or digit made "-", cut at 200 characters (a hash follows then).
CLAUDE_SLUG_MAX = 200
SESSION_ID_KEY = Lazy(rb'"sessionId"\s*:\s*"([^"]+)"')  # a JSON chat's own id


def claude_slug(path: str) -> str:
    return "".join(c if c.isascii() and c.isalnum() else "-" * (2 if ord(c) > 0xFFFF else 1)
                   for c in path)[:CLAUDE_SLUG_MAX]


def claude_project_dir(path: str) -> str:
    """The slug, and when cut, the base 36 of Java's String.hashCode of the path, as Claude
    Code names it (a memory folder has no cwd to check)."""
    slug = claude_slug(path)
    units = path.encode("utf-16-le", "surrogatepass")
    if len(units) // 2 <= CLAUDE_SLUG_MAX:
        return slug
    digest = 0
    for i in range(0, len(units), 2):
        digest = (digest * 31 + int.from_bytes(units[i:i + 2], "little")) & 0xFFFFFFFF
    digest = abs(digest - (1 << 32) if digest & 0x80000000 else digest)
    digits = ""
    while digest or not digits:
        digest, rest = divmod(digest, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[rest] + digits
    return f"{slug}-{digits}"


def main_checkout(root: str) -> str:
    """The main checkout of a linked worktree (its git dir's `commondir`): Claude Code
    keys auto memory by it, so every worktree of a repository shares one."""
    gitdir = git_dir(root) if os.path.isfile(os.path.join(root, ".git")) else None
    if gitdir is None:
        return root
    line = (file_head(os.path.join(gitdir, "commondir"), 4096) or b"").split(b"\n", 1)[0].strip()
    common = os.path.realpath(os.path.join(gitdir, os.fsdecode(line)))
    return os.path.dirname(common) if os.path.basename(common) == ".git" else root


def auto_memory_folder(root: str, claude: str) -> str | None:
    """Where Claude Code keeps the repository's auto memory, or None when it is off: as
    the user's, then the project's settings say (later wins), the environment over them."""
    enabled, folder = True, ""
    for path in (os.path.join(claude, "settings.json"), os.path.join(root, ".claude", "settings.json"),
                 os.path.join(root, ".claude", "settings.local.json")):
        try:
            doc = json.loads((file_head(path, -1) or b"{}").lstrip(b"\xef\xbb\xbf"))
        except (ValueError, RecursionError):
            continue
        doc = doc if isinstance(doc, dict) else {}
        if isinstance(doc.get("autoMemoryEnabled"), bool):
            enabled = doc["autoMemoryEnabled"]
        if isinstance(doc.get("autoMemoryDirectory"), str) and doc["autoMemoryDirectory"].strip():
            folder = os.path.join(root, os.path.expanduser(doc["autoMemoryDirectory"].strip()))
    off = os.environ.get("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "").strip().lower()
    if off in ("1", "true", "yes", "on") or not enabled and off not in ("0", "false", "no", "off"):
        return None
    return folder or os.path.join(claude, "projects", claude_project_dir(main_checkout(root)), "memory")


def _first_cwd(path: str, kinds: tuple[str, ...] = ()) -> Any:
    for record in head_records(path, 200):
        payload = record.get("payload") if record.get("type") in kinds else record
        if isinstance(payload, dict) and payload.get("cwd"):
            return payload["cwd"]
    return None


def discover(root: str, since: float | None, passed: list[str], memo: Any) -> list[tuple[str, str]]:
    """(path, tool) of the repository's sessions; a matching folder's with cwd outside: `passed`."""
    env, home = os.environ, os.path.expanduser("~")
    found: list[tuple[str, str]] = []

    def walk(folder: str) -> list[str]:
        return expand_inputs([folder], strict=False)[0] if os.path.isdir(folder) else []

    claude_home = env.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    claude, slug = os.path.join(claude_home, "projects"), claude_slug(root)
    # The slug is lossy (/a-b and /a/b share it) and sessions started in a subfolder live
    # under longer slugs: match by prefix, then check cwd.
    for name in sorted(os.listdir(claude)) if os.path.isdir(claude) else []:
        if name == slug or name.startswith(slug + "-"):
            for path in expand_inputs([os.path.join(claude, name)], strict=False)[0]:
                if path.endswith(".jsonl"):
                    if inside(memo("claude-cwd", path, _first_cwd), root):
                        found.append((path, "claude"))
                    else:
                        passed.append(path)
    codex = os.path.join(env.get("CODEX_HOME") or os.path.join(home, ".codex"), "sessions")
    found += [(path, "codex") for path in walk(codex)
              if os.path.basename(path).startswith("rollout-") and path.endswith(".jsonl")
              and inside(memo("codex-cwd", path, lambda p: _first_cwd(p, ("session_meta",))), root)]
    digest = hashlib.sha256(root.encode()).hexdigest()
    chats = os.path.join(env.get("GEMINI_CLI_HOME") or home, ".gemini", "tmp", digest, "chats")
    found += [(p, "gemini") for p in walk(chats) if p.endswith(".json")]
    copilot = os.path.join(env.get("COPILOT_HOME") or os.path.join(home, ".copilot"), "session-state")
    for path in walk(copilot):  # <sessionId>/events.jsonl, or an older <sessionId>.jsonl
        rel = os.path.relpath(path, copilot).split(os.sep)
        if (rel[1:] == ["events.jsonl"] or len(rel) == 1 and path.endswith(".jsonl")) \
                and inside(memo("copilot-cwd", path, copilot_cwd), root):
            found.append((path, "copilot"))
    opencode = os.path.join(env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "opencode")
    for name in sorted(os.listdir(opencode)) if os.path.isdir(opencode) else []:
        path = os.path.join(opencode, name)  # opencode.db, or opencode-<channel>.db
        if name.startswith("opencode") and name.endswith(".db") and is_opencode_db(path, root):
            found.append((path, "opencode"))
    # Auto memory's notes, from their own folder (the walk above takes only .jsonl files).
    notes = auto_memory_folder(root, claude_home)
    if notes and os.path.isdir(notes):
        found += [(path, "claude-auto-memory") for path in expand_inputs([notes])[0]
                  if path.endswith(".md") and (path, "claude-auto-memory") not in found]
    # SpecStory saves its histories inside the repository, usually committed.
    history = os.path.join(root, ".specstory", "history")
    if os.path.isdir(history):
        found += [(path, "specstory") for path in (os.path.join(history, n) for n in sorted(os.listdir(history)))
                  if path.endswith(".md") and os.path.isfile(path)]
    if since is not None:
        found = [(p, t) for p, t in found if session_time(p, t) >= since]
    return found


def one_reading(paths: list[str], memo: Any = no_memo) -> tuple[list[str], int]:
    """The inputs with each conversation read once, and how many were passed over: the
    tool's own file over a SpecStory copy (it keeps the records' flags), else the larger."""
    histories = {i: sid for i, p in enumerate(paths) if p != "-" and p.endswith(".md")
                 and (sid := memo("specstory-session", p, specstory_session))}
    if not histories:
        return paths, 0
    own = {memo("conversation", p, conversation_id) for i, p in enumerate(paths)
           if i not in histories and p != "-"}
    best: dict[str, int] = {}
    for i, sid in histories.items():
        if sid not in own and (sid not in best or getattr(_stat(paths[i]), "st_size", 0)
                               > getattr(_stat(paths[best[sid]]), "st_size", 0)):
            best[sid] = i
    kept = [p for i, p in enumerate(paths) if i not in histories or best.get(histories[i]) == i]
    return kept, len(paths) - len(kept)


def specstory_session(path: str) -> str | None:
    head = (file_head(path, SNIFF_BYTES) or b"").split(b"\n")[:12]
    found = (SPECSTORY_SESSION.fullmatch(raw.decode("utf-8", "replace").strip()) for raw in head)
    return next((match.group(2) for match in found if match), None)


def conversation_id(path: str) -> str | None:
    """A session's own id (none for a subagent file: it names its parent's)."""
    if not path.endswith(".jsonl"):
        match = SESSION_ID_KEY.search(file_head(path, 1 << 16) or b"")
        return match.group(1).decode("utf-8", "replace") if match else None
    for record in head_records(path, 50):
        if record.get("type") == "session_meta" and isinstance(record.get("payload"), dict):
            return session_id(record, "codex") or None
        if session_id(record, "claude") is not None:
            return None if record.get("isSidechain") else session_id(record, "claude")
    return None


def session_time(path: str, tool: str) -> float:
    """When a session was last active: a committed SpecStory file's mtime is the checkout's."""
    if tool == "specstory":
        latest = None
        with contextlib.suppress(OSError), open(path, "rb") as handle:
            for raw in filter(lambda raw: raw.startswith(b"_**"), handle):
                turn = SPECSTORY_TURN.fullmatch(raw.decode("utf-8", "replace").strip())
                when = specstory_moment(turn.group(3) or "") if turn else None
                latest = when if when is not None and (latest is None or when > latest) else latest
        latest = latest if latest is not None else specstory_moment(os.path.basename(path))
        if latest is not None:
            return latest
    return getattr(_stat(path), "st_mtime", 0.0)


def specstory_moment(text: str) -> float | None:
    """A SpecStory time as an epoch time; one without a zone is taken as UTC."""
    match = SPECSTORY_TIME.search(text)
    if not match:
        return None
    year, month, day, hour, minute, second, zone = match.groups()
    digits = zone[1:].replace(":", "") if zone and zone != "Z" else "0000"
    offset = datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    offset = -offset if zone and zone[0] == "-" else offset
    try:
        return datetime.datetime(*map(int, (year, month, day, hour, minute, second or 0)),
                                 tzinfo=datetime.timezone(offset)).timestamp()
    except ValueError:
        return None


def copilot_cwd(path: str) -> Any:
    for record in head_records(path, 20):
        if record.get("type") == "session.start":
            data = record.get("data")
            context = data.get("context") if isinstance(data, dict) else None
            return context.get("cwd") if isinstance(context, dict) else None
    return None


def discovery_note(root: str, found: int, passed: list[str], since: bool) -> str | None:
    outside = (f"{len(passed)} Claude Code session{'s' if len(passed) != 1 else ''} in a matching folder "
               f"passed over: their cwd is outside {home_display(root)}") if passed else ""
    if found:
        return f"{PROG}: {outside}" if outside else None
    where = "modified since --since " if since else ""
    return (f"{PROG}: no sessions {where}found for {home_display(root)} (Claude Code, Codex, Gemini CLI, "
            f"Copilot CLI, OpenCode, SpecStory; see --list-sources)" + (f"; {outside}" if outside else ""))


# == Configuration a team commits: [tool.memory-diff] in pyproject.toml, or
# .memory-diff.toml, the nearest one from the current folder up to the repository root.

CONFIG_KEYS = {  # each key's type
    **dict.fromkeys(("memory", "section", "seen", "format", "since"), str),
    **dict.fromkeys(("max-add", "min-score", "jobs"), int),
    **dict.fromkeys(("roles", "signal", "noise", "lint-ignore"), list),
    **dict.fromkeys(("include-sidechains", "include-summaries", "include-user-notes"), bool),
    "allow-pii": bool,
}
CONFIG_PATHS = ("memory", "seen")  # relative to the config file
# The finding kinds lint-ignore may silence: all but secret.
SILENCEABLE = ("note", "pii", "invisible", "injection", "import", "duplicate", "size", "stale")


def read_config() -> dict[str, Any]:
    """The nearest config file's settings, validated; {} where there is none."""
    for folder in upward(os.getcwd(), repo_root(os.getcwd())):
        for name in (".memory-diff.toml", "pyproject.toml"):
            path = os.path.join(folder, name)
            if not os.path.isfile(path):
                continue
            import tomllib  # here: most runs find no configuration
            try:
                with open(path, "rb") as handle:
                    doc = tomllib.load(handle)
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise UserError(path, f"invalid TOML: {exc}") from None
            tool = doc.get("tool")
            nested = tool.get("memory-diff") if isinstance(tool, dict) else None
            # .memory-diff.toml holds plain keys or the same [tool.memory-diff] table.
            table = nested if nested is not None or name == "pyproject.toml" else doc
            if table is not None:
                return load_config(path, table)
    return {}


def load_config(path: str, table: Any) -> dict[str, Any]:
    """Validated settings from a config table; relative paths made relative to it."""
    if not isinstance(table, dict):
        raise UserError(path, "[tool.memory-diff] must be a table")
    out: dict[str, Any] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("_", "-")
        if key not in CONFIG_KEYS:
            raise UserError(path, f"unknown key {raw_key!r}")
        kind = CONFIG_KEYS[key]
        if key == "lint-ignore":
            out["lint_ignore"] = lint_ignore(path, raw_key, value)
            continue
        if key == "roles" and isinstance(value, str):
            value = [v.strip() for v in value.split(",")]
        if type(value) is not kind or kind is int and value < 1 and key != "min-score" \
                or kind is list and not all(isinstance(v, str) for v in value):
            expected = {str: "a string", int: "a whole number of at least 1", list: "a list of strings",
                        bool: "true or false"}[kind]
            raise UserError(path, f"key {raw_key!r} must be {expected}")
        if key in ("signal", "noise"):
            for pattern in value:
                try:
                    build_rules(SIGNAL, (pattern,), "check")  # as it will be compiled
                except re.error as exc:
                    raise UserError(path, f"key {raw_key!r}: bad regular expression {pattern!r}: {exc}") from None
        if key == "format" and value not in FORMATS:
            raise UserError(path, f"key {raw_key!r} must be one of {', '.join(FORMATS)}")
        try:
            if key == "roles":
                value = parse_roles(",".join(value))
            elif key == "since":
                value = parse_since(value)
        except argparse.ArgumentTypeError as exc:
            raise UserError(path, f"key {raw_key!r}: {exc}") from None
        if key in CONFIG_PATHS:
            value = os.path.join(os.path.dirname(path), os.path.expanduser(value))
        out[key.replace("-", "_")] = value
    return out


def lint_ignore(path: str, raw_key: str, value: Any) -> tuple[tuple[str, str | None], ...]:
    """`[{kind = "duplicate", text = "- Run make test."}]`: (kind, normalised text or None)."""
    entries = []
    for entry in value if isinstance(value, list) else [None]:
        if not isinstance(entry, dict) or set(entry) - {"kind", "text"} or not isinstance(entry.get("kind"), str) \
                or not isinstance(entry.get("text", ""), str):
            raise UserError(path, f"key {raw_key!r} must be a list of tables with a kind and, if wanted, a text")
        if entry["kind"] == "secret":
            raise UserError(path, f"key {raw_key!r}: secret findings cannot be silenced")
        if entry["kind"] not in SILENCEABLE:
            raise UserError(path, f"key {raw_key!r}: kind must be one of {', '.join(SILENCEABLE)}")
        entries.append((entry["kind"], normalize(entry["text"]) if "text" in entry else None))
    return tuple(entries)


# == Lint: the same gates over an existing memory file, read only. =====================

# What reads a file decides its budget: its name (or its link's target), a CLAUDE.md that
# imports it (Claude Code loads that one on its own), for Codex AGENTS.md files above it.
CODEX_CHAIN = ("AGENTS.override.md", "AGENTS.md")  # in each folder, the first that exists
CLAUDE_IMPORTERS = (*sorted(BUDGET_FILE["Claude Code"]), os.path.join(".claude", "CLAUDE.md"))
IMPORT_PATH = Lazy(r"(?:^|(?<=[\s(\[\"']))@([^\s`'\"()\[\]<>@]+)")
BUDGET_DOES = {"Claude Code": "Claude Code warns past {limit:,} characters of CLAUDE.md",
               "Codex": "Codex truncates AGENTS.md at 32 KiB ({limit:,} bytes)"}


def agent_budgets(path: str) -> list[tuple[str, str, int, int]]:
    """(agent, unit, limit, bytes loaded before this file) of each agent that reads it."""
    real = os.path.realpath(path)
    names = {os.path.basename(path), os.path.basename(real)}
    root = repo_root(os.path.dirname(real))
    out = []
    for agent, unit, limit in BUDGETS:
        if agent == "Codex" and names & BUDGET_FILE[agent]:
            out.append((agent, unit, limit, codex_before(real, root)))
        elif agent == "Claude Code" and (names & BUDGET_FILE[agent] or imported_by_claude(real, root)):
            out.append((agent, unit, limit, 0))
    return out


def codex_before(real: str, root: str | None) -> int:
    """Bytes of the AGENTS.md files Codex reads before this one, from the root down."""
    if root is None:
        return 0
    total, root = 0, os.path.realpath(root)
    for folder in upward(os.path.dirname(os.path.dirname(real)), root):
        if not folder.startswith(root):
            break
        found = next(filter(None, (_stat(os.path.join(folder, n)) for n in CODEX_CHAIN)), None)
        total += found.st_size if found else 0
    return total


def imported_by_claude(real: str, root: str | None) -> bool:
    """Whether a CLAUDE.md here or above (up to the root) imports it with `@path`."""
    top = os.path.realpath(root) if root else os.path.dirname(real)
    for folder in upward(os.path.dirname(real), top):
        for name in CLAUDE_IMPORTERS:
            importer = os.path.join(folder, name)
            if os.path.realpath(importer) == real or not os.path.isfile(importer):
                continue
            data = file_head(importer, 1 << 20)
            for _, line in unfenced((data or b"").decode("utf-8", "replace").split("\n")):
                for target in IMPORT_PATH.findall(CODE_SPAN.sub("", line)):
                    target = target.rstrip(".,;:")
                    if not target.startswith(("~", "/")) and \
                            os.path.realpath(os.path.join(os.path.dirname(importer), target)) == real:
                        return True
        if not folder.startswith(top):
            break
    return False


# Lines that group the bullets after them as a heading does, under which teams repeat a
# rule on purpose: a numbered item, a bold label (`- ❌ **Never use print!:**`).
NUMBERED_ITEM = Lazy(r"^\s*\d{1,3}[.)]\s")
BOLD_LABEL = Lazy(r"^\s*(?P<bullet>[-*+]\s+)?(?:[^\w\s*_`]{1,4}\s*)?(\*\*|__)(?=\S).+?(?<=\S)\2(?P<rest>.*)$")
LABEL_END = Lazy(r"\s*[:：]?\s*")

# U+FE0F/U+FE0E after an emoji and U+200D joining two (`⚠️`, `👨‍💻`) are part of it, not
# hidden text; only one selector, since a run of them is how data is smuggled in one.
EMOJI_BASE = ("[\u00a9\u00ae\u203c\u2049\u2122\u2139\u2190-\u21ff\u2300-\u23ff\u24c2\u25a0-\u27bf"
              "\u2900-\u297f\u2b00-\u2bff\u3030\u303d\u3297\u3299\U0001f000-\U0001faff]")
EMOJI_SEQUENCE = Lazy(f"{EMOJI_BASE}[\ufe0e\ufe0f]?(?:\u200d{EMOJI_BASE}[\ufe0e\ufe0f]?)*|[#*0-9]\ufe0f\u20e3")


def emoji_plain(text: str) -> str:
    return EMOJI_SEQUENCE.sub(lambda m: re.sub("[\ufe0e\ufe0f\u200d]", "", m.group()), text)


def home_names_person(home: str) -> bool:
    """Whether a home path names a person: not a system or CI account, nor a placeholder."""
    name = re.split(r"[\\/]", home)[-1].rstrip(".,;:)'\"`")
    return name.lower() not in SYSTEM_ACCOUNTS and not SERVICE_USER.search(name) \
        and not ROLE_ACCOUNT.fullmatch(name) and not HOME_PLACEHOLDER.search(name)


def lint_text(text: str, budgets: Sequence[tuple[str, str, int, int]] = (),
              committed: str | None = None) -> list[tuple[int, str, str]]:
    """(line, kind, message) findings, never quoting a secret or personal datum. Personal
    data already in `committed` (the file as last committed) is a note: the team kept it."""
    findings: list[tuple[int, str, str]] = []
    original = text
    # Each line is cleaned as build cleans a message (invisible characters out, bold
    # markers off): a soft hyphen in a prefix hides nothing; invisible ones are findings.
    raw_lines = text.split("\n")
    text = "\n".join(strip_emphasis(clean_invisible(line)[0].replace("\n", " ")) for line in raw_lines)
    secrets = scan_secrets(text)
    for secret in secrets:
        at = text.count("\n", 0, secret.start) + 1  # the same line in the original
        if secret.example:
            findings.append((at, "note",
                             f"documentation example {secret.kind} (not a leak; value withheld)"))
        else:
            kind = "random-looking token of no named kind" if secret.kind == RANDOM_KIND else secret.kind
            findings.append((at, "secret", f"{kind} (value withheld)"))
    for secret in reversed(secrets):  # blank them out, keeping offsets: reported once
        text = text[:secret.start] + re.sub(r"[^\n]", " ", text[secret.start:secret.end]) + text[secret.end:]
    first_line: dict[tuple[int, str], int] = {}
    lines = text.split("\n")
    heading_at = {index for index, line in unfenced(lines) if HEADING.match(line.lstrip("\ufeff"))}
    fenced = set(range(len(lines))) - {index for index, _ in unfenced(lines)}
    group = 0  # the line number of the heading, numbered item or bold label the line is under
    for number, (line, raw) in enumerate(zip(lines, raw_lines), 1):
        if number - 1 in heading_at:
            group = number
        for kind, start, end in find_pii(line):
            what = "e-mail address" if kind == "email" else "phone number"
            if kind == "email" and ROLE_ACCOUNT.fullmatch(line[start:end].split("@", 1)[0]):
                continue  # a role or seeded test account, no person's
            if committed is not None and line[start:end] in committed:
                findings.append((number, "note", f"{what} (withheld) already committed: build withholds new ones"))
            else:
                findings.append((number, "pii", f"{what} (withheld)"))
        if any(home_names_person(match.group()) for match in HOME_PATH.finditer(line)):
            findings.append((number, "pii", "absolute home path names a person (use ~/)"))
        bidi = BIDI.search(raw)
        visible = emoji_plain(raw.rstrip("\r").replace("\t", " "))  # a line ending and a tab are fine
        hidden = INVISIBLE.search(visible.lstrip("\ufeff") if number == 1 else visible)
        for found, what in ((bidi, "bidirectional control"), (hidden, "invisible character")):
            if found:
                findings.append((number, "invisible", f"{what} U+{ord(found.group()):04X}"))
        if INJECTION.search(line):
            findings.append((number, "injection", "text that addresses the agent to override its instructions"))
        if OUTSIDE_IMPORT.search(CODE_SPAN.sub("", line)) and number - 1 not in fenced:  # not code
            findings.append((number, "import", "an @path import outside the repository"))
        if line.lstrip().startswith(("- ", "* ", "+ ")) and number - 1 not in fenced:  # no tree
            # A bullet is its line and the indented lines that carry it on, not its first line.
            rest = itertools.takewhile(lambda more: more[:1] in (" ", "\t") and more.strip()
                                       and not BULLET.match(more), lines[number:])
            first = first_line.setdefault((group, normalize(" ".join([line, *rest]))), number)
            if first != number:
                findings.append((number, "duplicate", f"same bullet as line {first} in the same section"))
        if number - 1 not in heading_at and number - 1 not in fenced and opens_group(clean_invisible(raw)[0]):
            group = number
    for agent, unit, limit, before in budgets:
        size = len(original) if unit == "chars" else len(original.encode())
        if before + size > limit:
            room = max(0, limit - before)
            cut = room if unit == "chars" else len(original.encode()[:room].decode("utf-8", "ignore"))
            total = f", {before + size:,} with the AGENTS.md files above it" if before else ""
            past = "from this line on it is not read" if agent == "Codex" else "this line crosses it"
            findings.append((original.count("\n", 0, cut) + 1, "size",
                             f"{size:,} {unit}{total}; {BUDGET_DOES[agent].format(limit=limit)}: {past}"))
    return sorted(findings)


def opens_group(line: str) -> bool:
    if NUMBERED_ITEM.match(line):
        return True
    label = BOLD_LABEL.match(line)
    return label is not None and (not label["bullet"] or bool(LABEL_END.fullmatch(label["rest"])))


def committed_text(real: str) -> str | None:
    """The file as last committed ("" if never), or None outside a repository or git."""
    if repo_root(os.path.dirname(real)) is None:
        return None
    data = git_output(os.path.dirname(real), "show", f"HEAD:./{os.path.basename(real)}")
    return data.decode("utf-8", "replace") if data is not None else ""


def run_lint(paths: list[str]) -> int:
    """Lint the files named, or build's memory file; notes and stale bullets never fail."""
    conf = read_config()
    if not paths:
        memory = conf.get("memory") or default_memory(cwd_root(), set())
        shown = os.path.relpath(memory)
        paths = [memory if shown.startswith("..") else shown]
    status = EXIT_OK
    out = []
    for path in paths:
        data = read_memory(path, path)
        if data is None:
            raise UserError(path, "no such file")
        text = data.decode("utf-8", "replace")
        lines = text.split("\n")
        real = os.path.realpath(path)
        budgets = agent_budgets(path)
        found_here = lint_text(text, budgets, committed_text(real))
        if not budgets:
            found_here.insert(0, (1, "note", f"size not checked: no agent is known to read this file by its name "
                                             f"or an @import ({len(data):,} bytes)"))
        found_here += stale_findings(real, text, conf.get("seen"))
        for line, kind, message in sorted(found_here):
            if silenced(conf.get("lint_ignore", ()), kind, lines[line - 1] if line <= len(lines) else ""):
                kind, message = "note", f"silenced {kind}: {message}"
            out.append(f"{one_line(path)}:{line}: {kind}: {message}\n")
            if kind not in ("note", "stale"):
                status = EXIT_PROPOSED
    write("".join(out).encode("utf-8", "replace"))
    return status


def silenced(ignore: Sequence[tuple[str, str | None]], kind: str, line: str) -> bool:
    """Whether a lint-ignore entry (kind, text if given) covers it; never a secret."""
    return kind != "secret" and any(k == kind and (text is None or text == normalize(line)) for k, text in ignore)


# -- lint: stale bullets ------------------------------------------------------------------
# A bullet naming a file since moved or a function since renamed misleads every session;
# a false stale costs more than a missed one: doubt is not flagged.

# Not a name: a URL, a `~/`, `$VAR`, flag, `@scope` or absolute path, a glob or a
# placeholder (`<name>`, `{id}`, `YOUR_KEY`, `...`), an assignment (`DEBUG=1`).
NOT_A_NAME = Lazy(r"://|^www\.|^[~$%@#/\\-]|[*?\[\]{}<>|=\\'\"!&…]|\.\.\.|(?i:your[_-]|^path/to/|^xxx|[/_]xxx)")
CALL_NAME = Lazy(r"([A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*)\([^()]*\);?")
DOTTED_NAME = Lazy(r"[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)+")
FILE_NAME = Lazy(r"[\w.+-]*\w\.([A-Za-z0-9]{1,10})|\.[A-Za-z0-9][\w.-]*")
CAMEL_CASE = Lazy(r"[A-Za-z][A-Za-z0-9]*(?:[a-z][A-Z]|[A-Z]{2}[a-z])[A-Za-z0-9]*")
SNAKE_CASE = Lazy(r"_*[a-z][a-z0-9]*(?:_+[a-z0-9]+)+_*")
LINE_SUFFIX = Lazy(r"(?::\d+)+$|#[\w.-]*$")
# `example.com`, `socket.io`: a host or product, not `Type.method`.
HOST_NAME = Lazy(r"[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|io|ai|dev|edu|gov|uk|de|cn|jp|fr|eu|xyz|cloud|tech)")
# `Next.js`, `Vue.js`: a capitalised name ending in .js is a product, not a file.
PRODUCT_JS = Lazy(r"[A-Z][A-Za-z0-9]*\.js")
# The extensions that make a dotted span a file name rather than `Type.method`.
FILE_EXTENSIONS = frozenset(
    "py pyi ipynb js mjs cjs jsx ts mts cts tsx vue svelte astro json jsonc json5 yaml yml toml ini cfg conf "
    "env md mdx rst adoc txt csv tsv xml html htm css scss sass less rs go java kt kts scala groovy gradle rb "
    "php c h cc cpp cxx hpp hh cs fs swift m mm dart lua r jl pl pm ex exs erl hrl hs ml mli clj cljs elm zig "
    "nim sh bash zsh fish ps1 bat cmd sql graphql gql proto tf tfvars hcl bzl bazel nix sol vim el mk cmake "
    "dockerfile lock sum mod svg png jpg jpeg gif webp ico pdf wasm patch diff j2 jinja tmpl tpl example sample "
    "template dist plist xcconfig pbxproj sln csproj props targets editorconfig gitignore dockerignore npmrc".split())
# Files that live outside the repository, or that an agent reads from the user's home.
OUTSIDE_FILES = frozenset({".bashrc", ".zshrc", ".profile", ".bash_profile", ".zprofile", ".gitconfig", ".netrc",
                           "known_hosts", "authorized_keys", "settings.json", "keybindings.json", "config.toml",
                           "settings.local.json", "hosts"} | MEMORY_FILE_NAMES.keys())
# A bullet that says a thing is gone, renamed or not to be used names it on purpose.
STALE_UNSURE = Lazy(r"(?i)\b(?:not|never|no|don'?t|doesn'?t|avoid|instead|rather than|deprecated|removed|"
                    r"renamed|replaced|legacy|formerly|obsolete|no longer|banned|forbidden|prefer|was|were|used to)\b")
# Other people's code, and files that are no evidence: changelogs, memory files and this
# tool's config and seen file (they quote bullets), lock files, bundles, binary formats.
VENDORED = frozenset({"node_modules", "vendor", "vendors", "third_party", "third-party", "thirdparty",
                      "bower_components", ".yarn", "Pods", "Carthage", "external", "externals"})
SKIPPED_FILE = Lazy(r"(?i)(?:^|/)(?:change(?:s|log)|history|news|releases?)(?:[._-][^/]*)?$|\.changeset/|"
                    r"(?:^|/)(?:\.cursorrules|\.windsurfrules|\.clinerules|copilot-instructions\.md|"
                    r"\.memory-diff\.toml|\.memory-diff-seen\.md)$|"
                    r"(?:^|/)\.(?:cursor/rules|clinerules)/|"
                    r"\.min\.(?:js|css)$|(?:^|/)(?:package-lock\.json|yarn\.lock|pnpm-lock\.yaml|bun\.lockb?|"
                    r"cargo\.lock|poetry\.lock|uv\.lock|gemfile\.lock|composer\.lock|go\.sum)$|"
                    r"\.(?:png|jpe?g|gif|webp|ico|pdf|zip|gz|tgz|bz2|xz|7z|jar|class|so|dylib|dll|exe|o|a|"
                    r"wasm|woff2?|ttf|otf|eot|mp[34]|mov|avi|sqlite|db|pyc|bin|lockb)$")
# Bounds for a large repository: a file over STALE_FILE_BYTES is skipped (generated code,
# data); past STALE_FILES files or STALE_TOTAL_BYTES the search stops, and flags nothing.
STALE_FILE_BYTES = 1 << 20
STALE_FILES = 20_000
STALE_TOTAL_BYTES = 32 << 20
STALE_CHUNK = 1 << 20
IDENTIFIER_BYTE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")


def span_name(span: str) -> tuple[str, str] | None:
    """("path", p), ("file", f) (may also read as a dotted symbol), ("symbol", s) or None."""
    text = span.strip("`").strip()
    if not text or any(c.isspace() for c in text) or NOT_A_NAME.search(text) or not text.isascii():
        return None
    call = CALL_NAME.fullmatch(text)
    if call:
        return "symbol", call.group(1)
    if DOTTED_NAME.fullmatch(text) and "::" in text:
        return "symbol", text
    text = LINE_SUFFIX.sub("", text)
    if ":" in text or "(" in text or ")" in text or "," in text or not text:
        return None
    if "/" in text:
        path = text[2:] if text.startswith("./") else text
        parts = path.rstrip("/").split("/")
        return ("path", path) if parts[0] and all(p not in ("", ".", "..") for p in parts) else None
    if PRODUCT_JS.fullmatch(text) or text in OUTSIDE_FILES or text[1:].lower() in FILE_EXTENSIONS:
        return None  # a product, a file of the user's, an extension (`.md`, `.env`)
    as_file = FILE_NAME.fullmatch(text)
    if as_file and (text.startswith(".") or as_file.group(1) in FILE_EXTENSIONS):
        return "file", text
    if DOTTED_NAME.fullmatch(text):
        return None if HOST_NAME.fullmatch(text) else ("symbol", text)
    return ("symbol", text) if CAMEL_CASE.fullmatch(text) or SNAKE_CASE.fullmatch(text) else None


def symbol_words(symbol: str) -> list[str]:
    return [part.lower() for part in re.split(r"\.|::", symbol) if part]


def stale_bullets(text: str) -> list[tuple[int, list[tuple[str, str, str]]]]:
    """(line number, [(span, kind, name)]) of each bullet's code spans that are names."""
    out = []
    for index, line in unfenced(text.split("\n")):
        if "`" not in line or not BULLET.match(line) or STALE_UNSURE.search(CODE_SPAN.sub(" ", line)):
            continue
        names = [(span, *named) for span in CODE_SPAN.findall(line) for named in [span_name(span)] if named]
        if names:
            out.append((index + 1, names))
    return out


class WorkingTree(NamedTuple):
    root: str
    files: frozenset[str]  # paths relative to the root, with /
    folders: frozenset[str]


def working_tree(root: str) -> WorkingTree | None:
    """The files git tracks and the untracked ones it does not ignore, or None."""
    data = git_output(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if data is None:
        return None
    files = frozenset(p for p in data.decode("utf-8", "surrogateescape").split("\0") if p)
    folders = frozenset(p[:i] for p in files for i, c in enumerate(p) if c == "/")
    return WorkingTree(root, files, folders)


def path_present(tree: WorkingTree, path: str, here: str, anywhere: bool) -> bool | None:
    """Whether the tree has the path (from the root, `here`, or with `anywhere` below any folder);
    None when that cannot be told: a first part in neither (`origin/main`), or in a submodule."""
    path = path.rstrip("/")
    parts = path.split("/")
    heads = [parts[0], f"{here}/{parts[0]}" if here else parts[0]]
    if not anywhere and not any(h in tree.files or h in tree.folders for h in heads):
        return None
    for base in ("", here):
        full = f"{base}/{path}" if base else path
        if full in tree.files or full in tree.folders or os.path.exists(os.path.join(tree.root, full)):
            return True
        if any("/".join(full.split("/")[:i]) in tree.files for i in range(1, full.count("/") + 1)):
            return None  # below a file: a submodule's
    return any(p == path or p.endswith("/" + path) for p in tree.files | tree.folders)


def ignored(tree: WorkingTree, paths: Iterable[str]) -> set[str]:
    """The paths git ignores, each asked with a slash too (a folder's rule `dist/` matches
    only that form); all of them when git cannot tell, so that none is flagged."""
    asked = sorted({form for path in paths for form in (path.rstrip("/"), path.rstrip("/") + "/")})
    if not asked:
        return set()
    out = git_output(tree.root, "check-ignore", "--stdin", "-z", ok=(0, 1),
                     given="\0".join(asked).encode("utf-8", "surrogateescape") + b"\0")
    if out is None:
        return set(asked)
    said = {p.rstrip("/") for p in out.decode("utf-8", "surrogateescape").split("\0") if p}
    return {path for path in paths if path.rstrip("/") in said}


def symbols_absent(tree: WorkingTree, words: set[str], skip: set[str]) -> set[str]:
    """The words (lowered) that no text file of the tree holds as a whole identifier; empty
    when the search stops at a bound (a word not found then is not known to be absent)."""
    wanted = {w.encode() for w in words}
    read_files = read_bytes = chunk_bytes = 0
    chunk: list[bytes] = []  # files are searched a megabyte at a time, joined by a line break
    for path in sorted(tree.files):
        if chunk_bytes >= STALE_CHUNK:
            data, chunk, chunk_bytes = b"\n".join(chunk).lower(), [], 0
            wanted -= {word for word in wanted if holds_word(data, word)}
        if not wanted:
            break
        if path in skip or SKIPPED_FILE.search(path) or os.path.basename(path) in MEMORY_FILE_NAMES \
                or VENDORED.intersection(path.split("/")[:-1]):
            continue
        if read_files >= STALE_FILES or read_bytes >= STALE_TOTAL_BYTES:
            return set()
        try:
            with open(os.path.join(tree.root, path), "rb") as handle:
                data = handle.read(STALE_FILE_BYTES + 1)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):  # deleted, or a submodule
            continue
        except OSError:
            return set()
        read_files += 1
        read_bytes += len(data)
        if len(data) <= STALE_FILE_BYTES and b"\0" not in data[:8192]:
            chunk.append(data)
            chunk_bytes += len(data)
    data = b"\n".join(chunk).lower()
    return {w.decode() for w in wanted if not holds_word(data, w)}


def holds_word(data: bytes, word: bytes) -> bool:
    """Whether `word` stands in `data` as a whole identifier (bytes.find: faster than a regex)."""
    at = data.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or data[at - 1] not in IDENTIFIER_BYTE) and (end == len(data) or data[end] not in IDENTIFIER_BYTE):
            return True
        at = data.find(word, at + 1)
    return False


def stale_findings(real: str, text: str, seen: str | None = None) -> list[tuple[int, str, str]]:
    """(line, "stale", message) of each bullet naming what the working tree lacks."""
    bullets = stale_bullets(text)
    root = repo_root(os.path.dirname(real)) if bullets else None
    tree = working_tree(root) if root else None
    if tree is None:
        return []
    rel = lambda p: os.path.relpath(p, os.path.realpath(tree.root)).replace(os.sep, "/")  # noqa
    here = rel(os.path.dirname(real))
    here = "" if here == "." else here
    paths = {name for _, names in bullets for _, kind, name in names if kind in ("path", "file")}
    missing = {p for p in paths if path_present(tree, p, here, "/" not in p) is False}
    told = ignored(tree, missing | {f"{here}/{p}" for p in missing if here})
    missing = {p for p in missing if p not in told and f"{here}/{p}" not in told}
    # A file named without its folder may be meant anywhere: stale only if no file names it.
    words = {w for _, names in bullets for _, kind, name in names
             for w in (symbol_words(name) if kind == "symbol" else [name.lower()] if name in missing else [])}
    skip = {rel(real)} | ({rel(os.path.realpath(seen))} if seen else set())
    absent = symbols_absent(tree, words, skip) if words else set()
    out = []
    for line, names in bullets:
        why = []
        for span, kind, name in names:
            if kind == "path" and name in missing:
                why.append(f"{span}: no such file or folder")
            elif kind == "file" and name in missing and name.lower() in absent:
                why.append(f"{span}: no such file, and no file names it")
            elif kind == "symbol" and any(w in absent for w in symbol_words(name)):
                why.append(f"{span}: in no file of the repository")
        if why:
            out.append((line, "stale", "; ".join(why)))
    return out


def stale_note(real: str, rel: str, data: bytes | None, seen: str | None) -> list[str]:
    """build's preamble line counting stale bullets: the hook reminds, never blocks."""
    if not data:
        return []
    ignore = read_config().get("lint_ignore", ())
    lines = data.decode("utf-8", "replace").split("\n")
    count = sum(not silenced(ignore, kind, lines[line - 1]) for line, kind, _ in
                stale_findings(real, "\n".join(lines), seen))
    return [f"{count} bullet{'s' if count != 1 else ''} of {rel} look{'s' if count == 1 else ''} stale "
            f"(they name files or code the repository no longer has): memory-diff lint lists them"] if count else []


# == The command line. =================================================================

def parse_since(value: str) -> float:
    """`7d`, `12h`, `30m`, `2w` ago, or an ISO date, as an epoch time."""
    match = re.fullmatch(r"(\d+)\s*([smhdw])", value.strip())
    if match:
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[match.group(2)]
        return datetime.datetime.now().timestamp() - min(int(match.group(1)) * unit, 1 << 40)
    try:
        moment = datetime.datetime.fromisoformat(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration (7d, 12h) or a date: {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def positive_int(value: str) -> int:
    with contextlib.suppress(ValueError):
        if int(value) >= 1:
            return int(value)
    raise argparse.ArgumentTypeError(f"must be a whole number of at least 1: {value!r}")


def parse_roles(value: str) -> frozenset[str]:
    roles = frozenset(r.strip() for r in value.split(",") if r.strip())
    if not roles or roles - {"user", "assistant"}:
        raise argparse.ArgumentTypeError(f"roles are user and assistant: {value!r}")
    return roles


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors in the tool's one-line form (exit 2 from main)."""

    def error(self, message: str) -> NoReturn:
        raise UserError("", message)


def make_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG, description="Propose additions to an agent memory file as a unified diff.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    build = commands.add_parser(
        "build", help="print a patch that appends bullets from transcripts",
        description="Print a unified diff that appends the decisions, constraints, root "
                    "causes and preferences found in TRANSCRIPTs to the memory file.")
    build.add_argument("transcripts", nargs="*", metavar="TRANSCRIPT",
                       help="transcript file, folder of transcripts, or - for stdin "
                            "(default: this repository's Claude Code, Codex, Gemini, Copilot CLI, "
                            "OpenCode and SpecStory sessions, and its Claude Code auto memory)")
    build.add_argument("--memory", metavar="PATH",
                       help="memory file to patch (default: the AGENTS.md, CLAUDE.md or GEMINI.md at "
                            "the repository root)")
    build.add_argument("--section", metavar="HEADING",
                       help="put the bullets at the end of this Markdown section (added if missing; "
                            f"default: {DEFAULT_SECTION} in a file that has sections, else the end)")
    build.add_argument("--seen", metavar="PATH",
                       help="file of bullets already proposed: never propose them again, and "
                            f"append the new ones to it in the same patch (default: {DEFAULT_SEEN} "
                            "once it exists)")
    build.add_argument("--max-add", type=positive_int, metavar="N",
                       help=f"propose at most N bullets (default: {DEFAULT_MAX_ADD})")
    build.add_argument("--min-score", type=int, metavar="N",
                       help=f"propose only candidates scoring at least N (default: {MIN_SCORE}; "
                            "lower finds more, less precisely)")
    build.add_argument("--format", choices=FORMATS, help="transcript format (default: detected)")
    build.add_argument("--roles", type=parse_roles, metavar="ROLES",
                       help="whose prose to read: user, assistant or both (default: user,assistant)")
    build.add_argument("--include-sidechains", action="store_true", default=None,
                       help="also read sub-agent (sidechain) messages")
    build.add_argument("--include-summaries", action="store_true", default=None,
                       help="also read model-written compaction summaries")
    build.add_argument("--allow-pii", action="store_true", default=None,
                       help="keep sentences with e-mail addresses and phone numbers")
    build.add_argument("--include-user-notes", action="store_true", default=None,
                       help="also propose auto-memory notes of type user (about the person)")
    build.add_argument("--since", type=parse_since, metavar="WHEN",
                       help="discover only sessions modified since WHEN (7d, 12h, 2026-01-31)")
    build.add_argument("--list-sources", action="store_true",
                       help="print the transcripts that would be read, and their formats")
    build.add_argument("--stats", action="store_true", help="print the accounting on stderr")
    build.add_argument("--json", action="store_true", help="print JSON instead of the patch")
    build.add_argument("--explain", action="store_true",
                       help="print every sentence with the stage that kept or dropped it")
    build.add_argument("--exit-code", action="store_true", help="exit 1 when something is proposed")
    build.add_argument("--baseline", action="store_true",
                       help="print a patch to the seen file only, recording everything read so "
                            f"far as reviewed (default seen file: {DEFAULT_SEEN})")
    build.add_argument("--jobs", type=positive_int, metavar="N",
                       help="read transcripts in N processes (default: CPUs)")
    build.add_argument("--no-cache", action="store_true",
                       help="read every transcript again, neither using nor updating the cache of "
                            "results kept in the repository's git directory")
    lint = commands.add_parser(
        "lint", help="check memory files for secrets, personal data and size",
        description="Check memory files, read only. Exit 1 on a finding other than a note.")
    lint.add_argument("memories", nargs="*", metavar="MEMORY",
                      help="memory file to check (default: the one build patches)")
    return parser


class Settings(NamedTuple):
    opts: Options
    memory: str | None  # None: default_memory() decides once the sessions are known
    section: str | None
    seen: str | None
    max_add: int
    since: float | None
    jobs: int | None


def settings(args: argparse.Namespace) -> Settings:
    """Command-line flags over the config file over the defaults."""
    conf = read_config()
    pick = lambda name, default=None: next(  # noqa: E731
        (v for v in (getattr(args, name, None), conf.get(name)) if v is not None), default)
    opts = Options(
        fmt=pick("format"), roles=pick("roles", frozenset({"user", "assistant"})),
        include_sidechains=bool(pick("include_sidechains")),
        include_summaries=bool(pick("include_summaries")), allow_pii=bool(pick("allow_pii")),
        extra_signal=tuple(conf.get("signal", ())), extra_noise=tuple(conf.get("noise", ())),
        explain=args.explain, min_score=pick("min_score", MIN_SCORE),
        count_all=args.stats or args.json, include_user_notes=bool(pick("include_user_notes")),
        root=cwd_root())
    seen = pick("seen")
    if seen is None:
        default = os.path.join(cwd_root(), DEFAULT_SEEN)
        seen = default if args.baseline or os.path.exists(default) else None
    for flag in ("memory", "seen"):
        if getattr(args, flag) == "":
            raise UserError(f"--{flag}", "must not be empty")
    return Settings(opts, pick("memory"), pick("section"), seen,
                    pick("max_add", DEFAULT_MAX_ADD), pick("since"), pick("jobs"))


# Flags that cannot be honoured together (--list-sources --json is a JSON list, no conflict).
CONFLICTS = (("json", "explain"), ("baseline", "json"), ("baseline", "explain"), ("list_sources", "explain"),
             ("list_sources", "baseline"), ("list_sources", "stats"), ("list_sources", "exit_code"))


def check_flags(args: argparse.Namespace) -> None:
    for one, other in CONFLICTS:
        if getattr(args, one) and getattr(args, other):
            flags = [f"--{name.replace('_', '-')}" for name in (one, other)]
            raise UserError("", f"{flags[0]} and {flags[1]} cannot be used together")
    if args.since is not None and args.transcripts:
        raise UserError("", "--since applies to discovered sessions: it cannot be used with named TRANSCRIPTs")


def run_build(args: argparse.Namespace) -> int:
    """build, with the memo of judged messages (_JUDGED) and of folders' names for this run
    only (a second run in one process reads the folders again)."""
    global _JUDGED
    _JUDGED = {}
    _folder_names.cache_clear()
    try:
        return _run_build(args)
    finally:
        _JUDGED = None


def _run_build(args: argparse.Namespace) -> int:
    check_flags(args)
    conf = settings(args)
    root = cwd_root()
    opened = None if args.no_cache else open_cache()
    # discovery's reads; the results' index is opened below, with the baseline
    known_cwds = CacheIndex(opened[0], "discovery", {"build": opened[1]}) if opened else None
    memo = known_cwds.memo if known_cwds else no_memo
    paths, walked, tools = build_inputs(args, conf, root, memo)
    memory = conf.memory if conf.memory is not None else default_memory(root, tools)
    conf = conf._replace(memory=memory)
    paths, same_session = one_reading(paths, memo)
    if known_cwds:
        known_cwds.save()
    check_targets(conf)
    if args.list_sources:
        return print_sources(args, conf, paths)
    seen_real, seen_rel, _ = patch_target(conf.seen) if conf.seen else ("", "", None)
    seen = read_memory(seen_real, conf.seen) if conf.seen else None
    record = read_seen(seen)
    opts = conf.opts._replace(baseline=record.baseline if record.baseline or args.baseline else None)
    # Results keyed by this run's options, the baseline among them: a moved one reads all again.
    cache = CacheIndex(opened[0], "results", {"build": opened[1], "options": options_key(opts)}) if opened else None
    results, cached = process_cached(paths, walked, opts, conf.jobs, cache)
    stats: Counter[str] = Counter()
    for result in results:
        stats.update(result.stats)
    stats.update(skipped_same_session=same_session, cached_files=cached)
    candidates = [c for result in results for c in result.candidates]
    target = patch_target(memory)
    current = read_memory(target[0], memory)
    known = memory_keys(current)
    proposed, dropped = select(candidates, known, record.shown, rejected(record, known), conf.max_add,
                               conf.opts.min_score, stats)
    if cache:
        cache.save()
    if args.baseline:
        return print_baseline(args, stats, results, record, seen_rel, seen, len(paths))
    if args.explain:
        print_explain(results, proposed, dropped)
    else:
        print_build(args, conf, results, proposed, stats, (target, current), (seen_rel, seen), len(paths))
    return finish(args, stats, proposed, script_note(stats))


def build_inputs(args: argparse.Namespace, conf: Settings, root: str, memo: Any
                 ) -> tuple[list[str], set[str], set[str]]:
    """The transcripts to read, named or discovered; those read leniently (a file that is
    no transcript, one being written, is passed over); the agents discovery found."""
    if args.transcripts:
        return (*expand_inputs(args.transcripts), set())
    passed: list[str] = []
    found = discover(root, conf.since, passed, memo)
    if note := discovery_note(root, len(found), passed, conf.since is not None):
        sys.stderr.write(one_line(note) + "\n")
    paths = [p for p, _ in found]
    return paths, set(paths), {t for _, t in found}


def print_sources(args: argparse.Namespace, conf: Settings, paths: list[str]) -> int:
    listed = [(home_display(p), conf.opts.fmt or source_format(p)) for p in paths]
    if args.json:
        out = json.dumps([{"file": p, "format": f} for p, f in listed], ensure_ascii=False, indent=2) + "\n"
    else:
        out = "".join(f"{one_line(p)}\t{f}\n" for p, f in listed)
    write(out.encode("utf-8", "replace"))
    return EXIT_OK


def print_explain(results: list[FileResult], proposed: list[Candidate],
                  dropped: list[tuple[Candidate, str, str]]) -> None:
    rows = [(order, text) for result in results for order, text in result.explain]
    rows += [(c.order, explain_line(stage, detail or (explain_score(c) if stage in ("dropped_over_cap", "dropped_weak")
                                                      else ""), c.file, c.line, c.role, c.text))
             for c, stage, detail in dropped]
    rows += [(c.order, explain_line("proposed", explain_score(c), c.file, c.line, c.role, c.text))
             for c in proposed]
    write("".join(text + "\n" for _, text in sorted(rows)).encode("utf-8", "replace"))


def print_build(args: argparse.Namespace, conf: Settings, results: list[FileResult], proposed: list[Candidate],
                stats: Counter[str], memory_file: tuple[tuple[str, str, str | None], bytes | None],
                seen_file: tuple[str, bytes | None], inputs: int) -> None:
    """The patch (or --json) and what the reviewer is told with it."""
    (real, rel, folder), current = memory_file
    seen_rel, seen = seen_file
    assert conf.memory is not None  # chosen by _run_build
    writes = [(path, write) for result in results for path, write in result.writes]
    bullets = [c.text for c in proposed]
    section = conf.section if conf.section is not None else default_section(current)
    notes: list[str] = []
    if proposed:  # what the reviewer is told, in the preamble or the JSON alike
        text = (current or b"").decode("utf-8", "replace").lstrip("\ufeff")
        notes = review_flags(proposed, MemoryIndex(text.split("\n")), rel)
        changed = {path: getattr(_stat(path), "st_mtime", math.inf) for path, _ in writes}  # stdin: not old
        notes += write_notes(proposed, writes, os.path.basename(real), memory_git_state(real) if writes else None,
                             changed)
        notes += budget_warnings(patched(current, bullets, section), rel, conf.memory)
        notes += stale_note(real, rel, current, conf.seen)
        notes += pending_note(stats, conf.max_add)
    if args.json:
        doc = {"stats": stats_dict(stats), "proposed": [
            {"text": c.text, "kind": c.kind, "score": c.score, "said_in": c.said_in,
             "request": withhold(c.request) or None,
             "source": {"file": withhold(c.file), "line": c.line, "role": c.role, "timestamp": c.timestamp,
                        **({"kind": c.source} if c.source else {})},
             **({"also": withhold(c.also)} if c.also else {})}
            for c in proposed], "notes": notes}
        write((json_text(doc) + "\n").encode("utf-8", "replace"))
    elif proposed:
        if folder:
            notes.append(f"apply this patch in {home_display(folder)}")
        notes.append(reject_note(rel, seen_rel if conf.seen else None))
        patch = render_preamble(proposed, stats, inputs - stats["skipped_files"], notes)
        patch += render_file_patch(rel, current, bullets, section)
        if conf.seen:
            patch += render_file_patch(seen_rel, seen, bullets, None)
        write(patch)


def finish(args: argparse.Namespace, stats: Counter[str], proposed: Sequence[Any],
           note: str | None = None) -> int:
    """--stats on stderr, and the exit status: 1 with --exit-code when anything is proposed."""
    if args.stats:
        sys.stderr.write("".join(f"{k}={v}\n" for k, v in stats_dict(stats).items()))
        if note:
            sys.stderr.write(f"{PROG}: note: {note}\n")
    return EXIT_PROPOSED if args.exit_code and proposed else EXIT_OK


def print_baseline(args: argparse.Namespace, stats: Counter[str], results: list[FileResult],
                   record: SeenFile, seen_rel: str, seen: bytes | None, sessions: int) -> int:
    """build --baseline: a patch adding to the seen file each conversation's new last record."""
    furthest: dict[str, int] = {}
    for result in results:
        key = result.conversation
        if key and result.through > max(record.baseline.get(key, 0), furthest.get(key, 0)):
            furthest[key] = result.through
    lines = [baseline_record(key, through) for key, through in sorted(furthest.items())]
    if lines:
        pending = stats["proposed"] + stats["dropped_over_cap"]
        read = sessions - stats["skipped_files"]
        plural = lambda n: "s" if n != 1 else ""  # noqa: E731
        head = [f"memory-diff: baseline of {len(lines)} conversation{plural(len(lines))} from {read} "
                f"session{plural(read)}: what they hold so far counts as reviewed ({pending} pending "
                f"proposal{plural(pending)} set aside)",
                "each line records a conversation and its last record read; what is added to it later is read"]
        write("".join(f"# {one_line(line)}\n" for line in head).encode("utf-8", "replace")
              + render_file_patch(seen_rel, seen, lines, None, marker=""))
    return finish(args, stats, lines)


def pending_note(stats: Counter[str], max_add: int) -> list[str]:
    """The patch holds at most max-add bullets by design: say that more are waiting."""
    more = stats["dropped_over_cap"]
    return [f"{more} more pending over the cap of {max_add}: once this patch is applied and "
            "committed, the next run proposes the next batch (or record them as reviewed: "
            "build --baseline)"] if more else []


def check_targets(conf: Settings) -> None:
    """Fail before any transcript is read when no patch could be made for the targets."""
    memory = conf.memory or ""
    for path in [memory] + ([conf.seen] if conf.seen else []):
        if os.path.isdir(path):
            raise UserError(path, "is a folder, not a memory file")
        if UNPRINTABLE.search(path):
            raise UserError(path, "a line break or control character in the name cannot go in a patch")
    if conf.seen and os.path.realpath(conf.seen) == os.path.realpath(memory):
        raise UserError(conf.seen, "the seen file cannot be the memory file")
    if conf.section is not None and UNPRINTABLE.search(conf.section):
        raise UserError("", f"--section must be one line of text: {conf.section!r}")
    if conf.section is not None and not conf.section.strip().lstrip("#").strip():
        raise UserError("--section", f"a heading needs a title: {conf.section!r}")


def json_text(doc: Any) -> str:
    """JSON with UTF-8 text as it is, but what one_line() escapes written as \\uXXXX."""
    text = json.dumps(doc, ensure_ascii=False, indent=2)  # escapes \n and \t itself
    return JSON_UNPRINTABLE.sub(lambda m: json.dumps(m.group())[1:-1], text)


def stats_dict(stats: Counter[str]) -> dict[str, int]:
    keys = list(STAT_KEYS) + sorted(k for k in stats if k not in STAT_KEYS)
    return {k: stats.get(k, 0) for k in keys}


def write(data: bytes) -> None:
    """The product to standard output. A failed write is an error (exit 1 would read as
    "proposals pending"); a reader that left (`| head`) is not: main handles it."""
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        raise UserError("standard output", "closed, nothing can be printed")
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        silence_stdout()  # what is left in the buffer must not fail again at exit
        raise UserError("standard output", exc.strerror or str(exc)) from None


def silence_stdout() -> None:
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise UserError("", "a command is required: build or lint (see --help)")
        return run_build(args) if args.command == "build" else run_lint(args.memories)
    except UserError as exc:
        sys.stderr.write(f"{PROG}: error: {one_line(str(exc))}\n")
        return EXIT_ERROR
    except BrokenPipeError:
        silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
