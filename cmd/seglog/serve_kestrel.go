package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/seglog/seglog/kestrel"
)

// defaultKestrelAddr is Kestrel's port on the loopback interface.
const defaultKestrelAddr = "127.0.0.1:22133"

// kestrelFlags is seglog serve's Kestrel listener (package kestrel).
type kestrelFlags struct {
	addr         string
	shutdown     bool
	maxItem      int64
	idle         time.Duration
	maxOpenReads int
}

func (k *kestrelFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&k.addr, "kestrel", "", "serve Kestrel's memcache text protocol on `ADDR` (--kestrel alone: "+defaultKestrelAddr+")")
	f.Lookup("kestrel").NoOptDefVal = defaultKestrelAddr
	f.BoolVar(&k.shutdown, "kestrel-shutdown", false, "let the memcache shutdown command stop the server")
	sizeFlag(f, &k.maxItem, "kestrel-max-item-size", kestrel.DefaultMaxItemSize, "largest value a set stores")
	durationFlag(f, &k.idle, "kestrel-idle-timeout", 0, "close a connection idle that long (0: never)")
	f.IntVar(&k.maxOpenReads, "kestrel-max-open-reads", kestrel.DefaultMaxOpenReads, "open reads one connection may hold on one queue")
}

func (k *kestrelFlags) enabled() bool { return k.addr != "" }

func (k *kestrelFlags) check() error {
	switch {
	case k.maxItem < 1 || k.maxItem > 1<<30:
		return fmt.Errorf("--kestrel-max-item-size %d: want 1 byte to 1GiB", k.maxItem)
	case k.maxOpenReads < 1:
		return fmt.Errorf("--kestrel-max-open-reads %d: want at least 1", k.maxOpenReads)
	case k.idle < 0:
		return fmt.Errorf("--kestrel-idle-timeout: want 0 or more")
	}
	return nil
}

func (k *kestrelFlags) start(d *served) (server, string, error) {
	s, err := kestrel.Listen(k.addr, d.store, d.ost, kestrel.Options{
		MaxItemSize:    int(k.maxItem),
		MaxOpenReads:   k.maxOpenReads,
		IdleTimeout:    k.idle,
		EnableShutdown: k.shutdown,
		Logger:         d.log.With("listener", "kestrel"),
	})
	if err != nil {
		return nil, "", fmt.Errorf("--kestrel: %w", err)
	}
	return s, "kestrel " + s.Addr().String(), nil
}
