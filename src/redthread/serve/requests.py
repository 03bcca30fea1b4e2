"""The bodies the app's JSON API takes, as pydantic models; the sampling fields are built from
SampleConfig's own (their types, defaults, meanings and bounds: generate/config.py), so the OpenAPI
schema, the validation and the CLI agree."""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, get_args, get_type_hints

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model
from pydantic_core import PydanticCustomError

from redthread.errors import RedthreadError
from redthread.generate.config import SampleConfig
from redthread.viz.inspector import MAX_CANDIDATES, check_text

MAX_NAME = 500  # characters in a model's name
MAX_COMPARED = 12  # models in one /api/compare


def _utf8(value: str) -> str:
    """A request's string, if it is text: a lone surrogate (JSON can carry "\\ud800") is not a character."""
    try:
        return check_text(value, "the string")
    except RedthreadError as e:
        raise PydanticCustomError("lone_surrogate", str(e)) from None


Text = Annotated[str, AfterValidator(_utf8)]


class TextRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt setting is a 422 naming it, never silently ignored

    model: Text = Field(max_length=MAX_NAME, description="a name from /api/models")
    text: Text = Field(description="the input text")


class AttentionRequest(TextRequest):
    neuron_layer: int | None = Field(-1, strict=True, description="the layer whose query and key vectors come with the answer, "
                                                     "for the neuron view (from 0; -1: the last; null: none)")


class ImageRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: Text = Field(max_length=MAX_NAME, description="an image run's name from /api/models")
    index: int | None = Field(None, ge=0, description="which image of the run's test split")
    image: str | None = Field(None, description="or an image file of your own, as a data: URL (base64)")
    name: Text | None = Field(None, max_length=200, description="the uploaded file's name, for the title (default: your image)")


def sampling_fields(*names: str) -> dict:
    """Request fields built from SampleConfig's: its types, defaults, meanings and bounds (generate/config.py)."""
    hints = get_type_hints(SampleConfig)
    out = {}
    for f in fields(SampleConfig):
        if f.name in names:
            finite = {"allow_inf_nan": False} if float in (hints[f.name], *get_args(hints[f.name])) else {}
            out[f.name] = (hints[f.name], Field(f.default, description=f.metadata["help"], **f.metadata["bounds"], **finite))
    return out


class CompareRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: list[Text] = Field(min_length=1, max_length=MAX_COMPARED, description="names from /api/models (text models)")
    text: Text = Field(description="the context every model conditions on")
    candidates: int = Field(8, ge=1, le=MAX_CANDIDATES, description="how many of each model's most probable tokens to list")


SETTINGS = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty")
NextRequest = create_model(
    "NextRequest", __base__=TextRequest, **sampling_fields(*SETTINGS),
    candidates=(int, Field(20, ge=1, le=MAX_CANDIDATES, description="how many of the most probable tokens to list")),
)
StepRequest = create_model("StepRequest", __base__=NextRequest, **sampling_fields("seed"))


def sampling(req: BaseModel) -> SampleConfig:
    """The request's sampling settings, as the one object the sampler, the inspector and the CLI share."""
    return SampleConfig(**{name: getattr(req, name) for name in (*SETTINGS, "seed") if hasattr(req, name)})
