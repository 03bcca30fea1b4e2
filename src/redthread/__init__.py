"""redthread: every model from linear regression to the Transformer learns a conditional
distribution from finite data by maximum likelihood, and predicts or generates with it.

    import redthread as rt
    cfg = rt.TransformerConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, d_model=128)
    model = rt.TransformerLM(cfg)                       # model(idx) -> logits (B, T, V)
    out = rt.generate(model, idx, max_new_tokens=100, top_p=0.9, seed=0)
    out = rt.speculative_generate(model, draft, idx, max_new_tokens=100, k=4, seed=0)  # a lower rung drafts
    model, tok = rt.pretrained("shakespeare-transformer")   # a reference model shipped with redthread
    rt.set_language("zh")                               # figures, summaries and reports in Chinese (or "en")
"""

from redthread.data.shipped_models import shipped_models
from redthread.errors import InvalidType, InvalidValue, MissingFile, RedthreadError
from redthread.generate.config import SampleConfig
from redthread.generate.processors import MinP, RepetitionPenalty, Temperature, TopK, TopP, build_processors
from redthread.generate.quantize import quantize_int8
from redthread.generate.sampler import generate, generate_stream
from redthread.generate.speculative import speculative_generate, speculative_rounds
from redthread.interop.huggingface import export_gpt2, from_pretrained
from redthread.interop.onnx_export import export_onnx
from redthread.lang import language, say, set_language
from redthread.layers.attention import MultiHeadAttention, scaled_dot_product_attention
from redthread.layers.blocks import BlockConfig, DecoderBlock, EncoderBlock
from redthread.layers.feedforward import FeedForward
from redthread.layers.kv_cache import KVCache
from redthread.layers.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from redthread.models.base import Classifier, Estimator, GaussianRegressor, LanguageModel
from redthread.models.bigram import BigramConfig, BigramLM
from redthread.models.captioner import Captioner, CaptionerConfig
from redthread.models.kneser_ney import KneserNeyConfig, KneserNeyLM
from redthread.models.likelihoods import gaussian_nll, normal_nll, token_nll
from redthread.models.mlp import MLPLM, MLPConfig
from redthread.models.ngram import NGramConfig, NGramLM
from redthread.models.recurrent import RecurrentConfig, RecurrentLM
from redthread.models.registry import build_model
from redthread.models.regression import LinearRegression, MLPClassifier, MLPRegressor, NadarayaWatson, SoftmaxRegression
from redthread.models.transformer import Decoder, Encoder, EncoderDecoder, TransformerConfig, TransformerLM
from redthread.models.vit import ViT, ViTConfig
from redthread.train.calibration import calibration
from redthread.train.checkpoint import load_checkpoint, pretrained, read_checkpoint, save_checkpoint
from redthread.train.fit import fit_gd
from redthread.train.loop import TrainConfig, evaluate
from redthread.viz.notebook import show_attention, show_image_attention, show_next_token
from redthread.viz.record import AttentionMaps, record_attention

__version__ = "0.1.0"

__all__ = [
    "RedthreadError", "InvalidValue", "InvalidType", "MissingFile", "Estimator", "LanguageModel", "Classifier",
    "GaussianRegressor", "build_model", "LinearRegression", "fit_gd", "MLPRegressor", "SoftmaxRegression", "MLPClassifier", "NadarayaWatson",
    "NGramConfig", "NGramLM", "KneserNeyConfig", "KneserNeyLM", "BigramConfig", "BigramLM", "MLPConfig", "MLPLM", "RecurrentConfig", "RecurrentLM",
    "TransformerConfig", "TransformerLM", "Encoder", "Decoder", "EncoderDecoder", "ViTConfig", "ViT",
    "CaptionerConfig", "Captioner",
    "scaled_dot_product_attention", "MultiHeadAttention", "KVCache", "FeedForward", "BlockConfig", "EncoderBlock",
    "DecoderBlock", "SinusoidalPositionalEncoding", "LearnedPositionalEmbedding",
    "generate", "generate_stream", "quantize_int8", "speculative_generate", "speculative_rounds", "SampleConfig", "build_processors", "Temperature", "TopK", "TopP", "MinP", "RepetitionPenalty",
    "TrainConfig", "evaluate", "calibration", "token_nll", "gaussian_nll", "normal_nll",
    "save_checkpoint", "load_checkpoint", "read_checkpoint", "pretrained", "shipped_models",
    "from_pretrained", "export_gpt2", "export_onnx",
    "record_attention", "AttentionMaps", "show_attention", "show_image_attention", "show_next_token",
    "language", "set_language", "say",
]
