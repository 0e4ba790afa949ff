# -*- Python -*-
# lit configuration for the pipeopt regression tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "pipeopt"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pipeopt_obj_root, "test")
# Inputs used by RUN lines, not tests themselves.
config.excludes = ["Inputs", "CMakeLists.txt", "README.md", "lit.cfg.py",
                   "lit.site.cfg.py", "consumer"]

config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"
# pipeopt-compile's object cache (docs/Runtime.md, "The object cache") in
# the build tree, not in the home directory of whoever runs the tests.
config.environment["PIPEOPT_CACHE_DIR"] = os.path.join(
    config.pipeopt_obj_root, "test", "object-cache")

llvm_config.use_default_substitutions()
config.substitutions.append(("%models", config.models_dir))
config.substitutions.append(("%pipeopt_src", config.pipeopt_src_root))
config.substitutions.append(("%pipeopt_lib", config.pipeopt_lib_dir))
config.substitutions.append(("%llvm_lib", config.llvm_lib_dir))
# test/Install builds a downstream project with this build's toolchain.
config.substitutions.append(("%pipeopt_obj", config.pipeopt_obj_root))
config.substitutions.append(("%cmake_generator", '"%s"' % config.cmake_generator))
config.substitutions.append(("%cmake_make_program", '"%s"' % config.cmake_make_program))
config.substitutions.append(("%cmake", '"%s"' % config.cmake_command))
config.substitutions.append(("%cxx_compiler", '"%s"' % config.cxx_compiler))
config.substitutions.append(("%c_compiler", '"%s"' % config.c_compiler))

tool_dirs = [config.pipeopt_tools_dir,
             os.path.join(config.pipeopt_obj_root, "runtime", "bin"),
             config.llvm_tools_dir]
tools = [
    "pipeopt",
    ToolSubst("pipeopt-explore", unresolved="ignore"),
    ToolSubst("pipeopt-run", unresolved="ignore"),
    ToolSubst("pipeopt-compile", unresolved="ignore"),
    ToolSubst("pipeopt-npy-diff", unresolved="ignore"),
    ToolSubst("pipeopt-converge", unresolved="ignore"),
    ToolSubst("pipeopt-calibrate", unresolved="ignore"),
    ToolSubst("pipeopt-gradcheck", unresolved="ignore"),
    "mlir-opt",
]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.pipeopt_tools_dir, append_path=True)

# A training loop of Session::run(1) (runtime/test/SessionStepsDriver.cpp).
session_steps = os.path.join(config.pipeopt_obj_root, "runtime", "test",
                             "pipeopt-rt-session-steps")
if os.path.exists(session_steps):
    config.available_features.add("session-steps")
    config.substitutions.append(("%session_steps", session_steps))

if getattr(config, "have_mpi", False):
    config.available_features.add("mpi")
    # Runtime end-to-end tests run ranks as processes (test/Runtime).
    # Each mpirun gets its own TMPDIR (test/lib/mpirun-isolated.sh): tests
    # that start mpirun at the same time race on Open MPI's session directory.
    config.substitutions.append(
        ("%mpirun", "sh " + os.path.join(config.pipeopt_src_root, "test", "lib",
                                         "mpirun-isolated.sh") + " " +
         config.mpiexec + " --allow-run-as-root --oversubscribe"))
if getattr(config, "have_cuda", False):
    # pipeopt was configured with a CUDA toolkit: --target=cuda compiles
    # and links (no GPU needed).
    config.available_features.add("cuda")
    config.substitutions.append(("%cuda_toolkit", config.cuda_toolkit_dir))
    if os.path.exists(os.path.join(config.pipeopt_obj_root, "runtime", "lib",
                                   "libpipeopt_rt_cuda.so")):
        # ... and links model .so files against libpipeopt_rt_cuda.so
        # (built by target pipeopt_rt_cuda, a dependency of check-pipeopt).
        config.available_features.add("cuda-rt")
if os.path.isdir(config.models_dir):
    config.available_features.add("models")
