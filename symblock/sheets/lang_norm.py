"""Version 1's words for the norms' conventions (before they named the row i: mu = 1/d sum_j x_j),
kept byte for byte for the sheets that generator version 1 drew; lang.py merges them into its
tables. Formatted with str.format: LaTeX braces are doubled."""
from __future__ import annotations

EN = {
    "conv_layernorm_v1": "LayerNorm per row: $\\mu = \\frac{{1}}{{d}}\\sum_j x_j$, population variance $\\sigma^2 = \\frac{{1}}{{d}}\\sum_j (x_j - \\mu)^2$ (divide by $d$, not $d-1$), $\\mathrm{{LN}}(x) = \\frac{{x - \\mu}}{{\\sqrt{{\\sigma^2 + \\varepsilon}}}} \\cdot \\gamma + \\beta$, with $\\varepsilon = {0}$.",
    "conv_layernorm_nobeta_v1": "LayerNorm per row: $\\mu = \\frac{{1}}{{d}}\\sum_j x_j$, population variance $\\sigma^2 = \\frac{{1}}{{d}}\\sum_j (x_j - \\mu)^2$ (divide by $d$, not $d-1$), $\\mathrm{{LN}}(x) = \\frac{{x - \\mu}}{{\\sqrt{{\\sigma^2 + \\varepsilon}}}} \\cdot \\gamma$ (no $\\beta$: the block has no biases), with $\\varepsilon = {0}$.",
    "conv_rmsnorm_v1": "RMSNorm per row: $m = \\frac{{1}}{{d}}\\sum_j x_j^2$, $\\mathrm{{RMS}}(x) = \\frac{{x}}{{\\sqrt{{m + \\varepsilon}}}} \\cdot \\gamma$, with $\\varepsilon = {0}$.",
}

ZH = {
    "conv_layernorm_v1": "LayerNorm 逐行计算：$\\mu = \\frac{{1}}{{d}}\\sum_j x_j$，总体方差 $\\sigma^2 = \\frac{{1}}{{d}}\\sum_j (x_j - \\mu)^2$（除以 $d$，不是 $d-1$），$\\mathrm{{LN}}(x) = \\frac{{x - \\mu}}{{\\sqrt{{\\sigma^2 + \\varepsilon}}}} \\cdot \\gamma + \\beta$，其中 $\\varepsilon = {0}$。",
    "conv_layernorm_nobeta_v1": "LayerNorm 逐行计算：$\\mu = \\frac{{1}}{{d}}\\sum_j x_j$，总体方差 $\\sigma^2 = \\frac{{1}}{{d}}\\sum_j (x_j - \\mu)^2$（除以 $d$，不是 $d-1$），$\\mathrm{{LN}}(x) = \\frac{{x - \\mu}}{{\\sqrt{{\\sigma^2 + \\varepsilon}}}} \\cdot \\gamma$（没有 $\\beta$：这个 block 没有偏置），其中 $\\varepsilon = {0}$。",
    "conv_rmsnorm_v1": "RMSNorm 逐行计算：$m = \\frac{{1}}{{d}}\\sum_j x_j^2$，$\\mathrm{{RMS}}(x) = \\frac{{x}}{{\\sqrt{{m + \\varepsilon}}}} \\cdot \\gamma$，其中 $\\varepsilon = {0}$。",
}
