#!/bin/bash
# prints what the ISA cap does to torch, oneDNN and MKL on this host
echo "## ATen capability"
python -c "import torch; print('get_cpu_capability:', torch.backends.cpu.get_cpu_capability())"
echo "## oneDNN ISA (fp32 conv through oneDNN) and whether torch uses oneDNN for bf16"
ONEDNN_VERBOSE=1 python -c "
import torch
torch.nn.functional.conv2d(torch.randn(8,64,56,56), torch.randn(64,64,3,3))
print('mkldnn bf16 supported:', torch.ops.mkldnn._is_mkldnn_bf16_supported())
a=torch.randn(256,256,dtype=torch.bfloat16); a@a
" 2>&1 | grep -E "isa:|bf16|brg_matmul" | grep -v "reorder"
echo "## MKL (fp32 matmul)"
MKL_VERBOSE=1 python -c "import torch; a=torch.randn(256,256); a@a" 2>&1 | head -1
