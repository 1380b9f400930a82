// Package clocksync holds clock synchronisation as pure computation: the
// NTPv4 packet (RFC 5905 §7.3) and its timestamps, the server's reply, the
// Cristian/NTP offset θ and delay δ of one exchange, and the
// minimum-delay filter over the last eight exchanges (Tanenbaum ch. 6, "Network
// Time Protocol": θ = ((T2 − T1) + (T3 − T4))/2, δ = (T4 − T1) − (T3 − T2),
// "the pair with the minimum delay among the last eight").
package clocksync
