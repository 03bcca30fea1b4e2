"""What a target id can say besides a token: "not scored".

Sequences of different lengths are padded to one length in a batch (names, captions); the
targets after a sequence's end are IGNORE_INDEX, which the likelihoods (`models/likelihoods.py`),
the counts of the n-gram rungs and calibration all skip. It is a property of the data, so it
lives here, below the models and the training code that read it.
"""

IGNORE_INDEX = -1  # a target that is not scored: padding after the end of a shorter sequence
