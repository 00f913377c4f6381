package cli

import (
	"fmt"
	"os"

	"github.com/podvisor/podvisor/internal/version"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newDocsCommand is `podvisor docs man DIR`, hidden: what `make install`
// runs with the binary it built to write the man pages, so that they
// describe exactly the commands and flags of that binary.
func newDocsCommand() *cobra.Command {
	docs := &cobra.Command{
		Use:    "docs",
		Hidden: true,
		Short:  "write podvisor's documentation (for make install)",
		Args:   cobra.ArbitraryArgs,
		RunE:   parentRun,
	}
	docs.AddCommand(&cobra.Command{
		Use:   "man DIR",
		Short: "write podvisor.1 and a man page per command (podvisor-get-pods.1, ...) into DIR",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return writeManPages(cmd.Root(), args[0])
		},
	})
	return docs
}

// writeManPages writes root's man pages, section 1, into dir (made if
// missing): one per command that help lists (completion too: Execute has
// added it), hidden ones left out. The date is $SOURCE_DATE_EPOCH's when
// set (cobra's doc reads it), so a packaged build is reproducible.
func writeManPages(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	root.DisableAutoGenTag = true
	header := &doc.GenManHeader{
		Section: "1",
		Source:  "podvisor " + version.Version,
		Manual:  "podvisor manual",
	}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}
