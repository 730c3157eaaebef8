"""Recurrent layers: SimpleRNN, LSTM, GRU, RNN with cells, Bidirectional, TimeDistributed, ConvLSTM."""
