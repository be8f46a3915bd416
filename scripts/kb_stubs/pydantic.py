"""Stand-in for pydantic on the GPU machine (KernelBench's eval.py needs only
BaseModel's defaults, keyword construction and attribute access)."""
import copy


class BaseModel:
    def __init__(self, **kw):
        for cls in reversed(type(self).__mro__):
            for k in getattr(cls, "__annotations__", {}):
                if hasattr(cls, k):
                    setattr(self, k, copy.copy(getattr(cls, k)))
        for k, v in kw.items():
            setattr(self, k, v)

    def model_dump(self):
        return dict(vars(self))

    dict = model_dump
