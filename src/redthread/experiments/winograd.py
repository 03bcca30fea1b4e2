"""Winograd-schema pairs for claim C13 (the coreference experiment): two sentences that differ in one
word (or one short phrase), and that word switches which of two candidates the pronoun refers to.

Most are from the Winograd Schema Challenge (Levesque, Davis and Morgenstern 2012, the WSC273
collection), a few are written in the same form; each is shortened where needed so that both
candidates are single words that occur once and the pronoun occurs once. In every pair the first
text's referent is the first candidate and the second text's referent the second one, so a reader
of the attention that ignores the switching word picks the same candidate in both and is right in
exactly one of the two texts.

The list is fixed before any measurement and is never filtered by what the model does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    pronoun: str
    candidates: tuple[str, str]  # (referent in texts[0], referent in texts[1])
    texts: tuple[str, str]
    switch: tuple[str, str]  # the word that differs: (in texts[0], in texts[1])


def pair(pronoun: str, candidates: str, template: str, first: str, second: str) -> Pair:
    """A pair from one template with '{}' where the switching word goes."""
    a, b = candidates.split()
    return Pair(pronoun, (a, b), (template.format(first), template.format(second)), (first, second))


PAIRS = [
    pair("it", "animal street", "The animal didn't cross the street because it was too {}.", "tired", "wide"),
    pair("it", "trophy suitcase", "The trophy doesn't fit into the brown suitcase because it is too {}.", "big", "small"),
    pair("they", "councilmen demonstrators",
         "The city councilmen refused the demonstrators a permit because they {} violence.", "feared", "advocated"),
    pair("he", "man son", "The man couldn't lift his son because he was so {}.", "weak", "heavy"),
    pair("she", "joan susan", "Joan made sure to thank Susan for all the help she had {}.", "received", "given"),
    pair("it", "fish worm", "The fish ate the worm because it was {}.", "hungry", "tasty"),
    pair("he", "lawyer witness", "The lawyer asked the witness a question, but he was reluctant to {} it.",
         "repeat", "answer"),
    pair("it", "truck bus", "The delivery truck zoomed by the school bus because it was going so {}.", "fast", "slow"),
    pair("he", "frank bill",
         "Frank felt {} when his longtime rival Bill revealed that he was the winner of the competition.",
         "vindicated", "crushed"),
    pair("he", "paul george", "Paul tried to call George on the phone, but he wasn't {}.", "successful", "available"),
    pair("it", "sack bag", "The sack of potatoes had been placed {} the bag of flour, so it had to be moved first.",
         "above", "below"),
    pair("he", "pete martin", "Pete envies Martin {} he is very successful.", "although", "because"),
    pair("they", "firemen police", "The firemen arrived {} the police because they were coming from so far away.",
         "after", "before"),
    pair("it", "sculpture shelf", "The sculpture rolled off the shelf because it wasn't {}.", "anchored", "level"),
    pair("she", "anna lucy", "Anna did a lot {} than her good friend Lucy on the test because she had studied so hard.",
         "better", "worse"),
    pair("it", "cat dog", "The dog chased the cat, which ran up a tree. It waited at the {}.", "top", "bottom"),
    pair("it", "drain hair", "The drain is clogged with hair. It has to be {}.", "cleaned", "removed"),
    pair("he", "bob charlie", "Bob paid for Charlie's college education. He is very {}.", "generous", "grateful"),
    pair("he", "john billy", "John couldn't see the stage with Billy in front of him because he is so {}.",
         "short", "tall"),
    pair("he", "tom ray", "Tom threw his schoolbag down to Ray after he reached the {} of the stairs.", "top", "bottom"),
    pair("she", "susan ann", "Susan knows all about Ann's personal problems because she is {}.", "nosy", "indiscreet"),
    pair("it", "ball table", "The large ball crashed right through the table because it was made of {}.",
         "steel", "styrofoam"),
    pair("it", "bottle cup", "I poured water from the bottle into the cup until it was {}.", "empty", "full"),
    pair("them", "eyes hands",
         "Fred covered his eyes with his hands, because the wind was blowing sand around. He {} them when the wind "
         "stopped.", "opened", "lowered"),
    pair("it", "table doorway", "The table won't fit through the doorway because it is too {}.", "wide", "narrow"),
    pair("she", "ann mary", "Ann asked Mary what time the library closes, {} she had forgotten.", "because", "but"),
    pair("them", "students ones", "The older students were bullying the younger ones, so we {} them.",
         "punished", "rescued"),
    pair("they", "police members",
         "The police arrested all of the gang members. They were trying to {} the drug trade in the neighborhood.",
         "stop", "run"),
    pair("it", "knife bread", "The knife cut through the bread easily because it was so {}.", "sharp", "soft"),
    pair("it", "ball window", "The ball broke the window because it was {}.", "heavy", "fragile"),
    pair("it", "cat mouse", "The cat was waiting for the mouse, but it was too {}.", "impatient", "cautious"),
    pair("they", "parents children", "The parents fed their children because they were {}.", "caring", "hungry"),
]
