"""The ``osworld`` judge: runs an OSWorld task's own evaluator spec on the prediction.

:mod:`.plugin` registers it; :mod:`.judge` is the judge; :mod:`.evaluator` combines checkers as
OSWorld does; :mod:`.checks` and :mod:`.pptx_compare` re-implement OSWorld's checkers.
"""

from .judge import OsworldJudge, prediction_files

__all__ = ["OsworldJudge", "prediction_files"]
