package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Key files for --signed. A signing key file holds one line: the base64
// of the 32-byte Ed25519 seed, and must not be readable by others. A
// public-keys file holds one "ID=base64-public-key" per line (or
// comma-separated), '#' starting a comment, like --peers.

var keygenFlags = cli.WithEnv(tool, []ucli.Flag{
	&ucli.StringFlag{Name: cli.FlagID, Usage: "this process's ID, an integer ≥ 1 present in --peers"},
	&ucli.StringFlag{Name: "out", Usage: "write the private key here (mode 0600; never overwritten)"},
	&ucli.BoolFlag{Name: "json", Usage: "print JSON lines instead of text"},
})

func keygen(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "unexpected argument %q", c.Args().First())
	}
	id, err := node.ParseID(c.String(cli.FlagID))
	out := c.String("out")
	if err != nil || out == "" {
		return cli.Exitf(cli.ExitUsage, "--id (an integer ≥ 1) and --out are required")
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return cli.Exitf(cli.ExitUsage, "--out: %s exists; a key is never overwritten (remove it first)", out)
		}
		return cli.Exitf(cli.ExitUsage, "--out: %v", err)
	}
	if _, err := fmt.Fprintln(f, base64.StdEncoding.EncodeToString(priv.Seed())); err != nil {
		f.Close()
		return cli.Exitf(cli.ExitUsage, "--out: %v", err)
	}
	if err := f.Close(); err != nil {
		return cli.Exitf(cli.ExitUsage, "--out: %v", err)
	}
	enc := base64.StdEncoding.EncodeToString(pub)
	if c.Bool("json") {
		fmt.Printf("{\"event\":\"key\",\"id\":%d,\"public_key\":%q}\n", id, enc)
	} else {
		fmt.Printf("%d=%s\n", id, enc)
	}
	return nil
}

// readSigningKey reads a private key written by keygen.
func readSigningKey(path string) (ed25519.PrivateKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s does not hold a key written by 'consensus keygen'", path)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// readPublicKeys reads a public-keys file (cli.ParseIDValues).
func readPublicKeys(path string) (map[node.ID]ed25519.PublicKey, error) {
	_, vals, err := cli.ParseIDValues("@"+path, "public-key")
	if err != nil {
		return nil, err
	}
	keys := map[node.ID]ed25519.PublicKey{}
	for id, enc := range vals {
		pub, err := base64.StdEncoding.DecodeString(enc)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("process %d: not a base64 Ed25519 public key", id)
		}
		keys[id] = pub
	}
	return keys, nil
}
