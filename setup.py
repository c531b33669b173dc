"""paraflax: paraphrastic sentence embeddings and mined bitext in JAX/Flax."""
import setuptools

setuptools.setup(
    name="paraflax",
    version="0.1.0",
    license="Apache-2.0",
    description="Back-translated paraphrases, bilingual sentence embeddings and "
    "margin-based mining in JAX/Flax.",
    packages=setuptools.find_packages(include=["paraflax", "paraflax.*"]),
    # The mining kernel's source: built on the user's machine at first use
    # (paraflax/mining/native.py).
    package_data={"paraflax.mining": ["tile_top_k.cc"]},
    python_requires=">=3.11,<3.12",
    # Ranges that install together on Python 3.11;
    # constraints.txt pins the exact set CI uses.
    install_requires=[
        "jax>=0.10.2,<0.11",
        "jaxlib>=0.10.2,<0.11",
        "flax>=0.12.8,<0.13",
        "optax>=0.2.8,<0.3",
        "orbax-checkpoint>=0.12.8,<0.13",
        "tensorflow>=2.21,<2.22",
        "tensorflow-text>=2.21,<2.22",
        "tensorflow-datasets>=4.9.10,<4.10",
        "seqio>=0.0.20,<0.0.21",
        "sentencepiece>=0.2.2,<0.3",
        "ml-collections>=1.1,<1.2",
        "importlib_resources>=7.1",
        "clu>=0.0.12",
        "tensorboard>=2.21,<2.22",
        "numpy>=2.4,<2.5",
        "scipy>=1.17,<1.18",
        "tqdm>=4.70",
        "sacrebleu>=2.6,<2.7",
        # Levenshtein matrices of the alignment-recovery baseline.
        "rapidfuzz>=3.14,<3.15",
        "matplotlib>=3.11,<3.12",
        "faiss-cpu>=1.15.1,<1.16",
        # Queries n-gram LMs (lm_ppl); launch/build_kenlm.sh builds the
        # trainer, lmplz, from the same version's source.
        "kenlm>=0.3.0,<0.4",
        # Word alignment for pivot paraphrases (paraflax/domain/alignment.py);
        # its wrapper calls Cython at run time.
        "eflomal>=2.0.0,<2.1",
        "Cython>=3.3,<4",
        # beam-score and cache-task run the data stages as Beam pipelines
        # (commands of the CLI, not of the tests alone); beam 2.77 needs
        # protobuf<7, which the rest of the stack accepts.
        "apache-beam[tfrecord]>=2.77,<2.78",  # tfrecord: crcmod, for seqio caches
        "protobuf>=6.33,<7",
    ],
    # nbclient runs colabs/ notebooks in an ipykernel of this interpreter;
    # pytest-xdist runs the tests in one process per core.
    # jax[tpu] (libtpu) lets the tests compile for TPU topologies on a CPU.
    extras_require={"test": ["pytest>=9,<10", "pytest-xdist>=3.8,<3.9",
                             "nbclient>=0.11,<0.12",
                             "nbformat>=5.11,<5.12", "ipykernel>=7.4,<7.5",
                             "jax[tpu]"],
                    # jax's own extras: its CUDA 12 plugin (with the CUDA
                    # wheels, NVIDIA driver >= 525) or libtpu, at jax's
                    # version (constraints.txt pins it).
                    "cuda": ["jax[cuda12]"],
                    "tpu": ["jax[tpu]"]},
    entry_points={"console_scripts": ["paraflax=paraflax.cli:main"]},
)
