package cli

import (
	"fmt"
	"time"

	"github.com/podvisor/podvisor/cli/printers"
	"github.com/spf13/cobra"
)

// newImagesCommand is podvisor images, as crictl images.
func newImagesCommand(g *globalOptions) *cobra.Command {
	var quiet bool
	cmd := &cobra.Command{
		Use:   "images",
		Short: "list the images in podvisor's containerd namespace, as crictl images does (-q: IDs only)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := g.client()
			if err != nil {
				return err
			}
			list, err := client.Images(cmd.Context())
			if err != nil {
				return err
			}
			if quiet {
				// crictl images -q: each image's full ID, once.
				seen := map[string]bool{}
				for _, im := range list.Items {
					if im.ID != "" && !seen[im.ID] {
						seen[im.ID] = true
						fmt.Fprintln(cmd.OutOrStdout(), printers.Escape(im.ID))
					}
				}
				return nil
			}
			images := make([]printers.Image, 0, len(list.Items))
			for _, im := range list.Items {
				// crictl's IMAGE ID is the config's digest, the api's ID.
				images = append(images, printers.Image{Name: im.Name, Digest: im.ID, Size: im.Size})
			}
			return printers.Images(cmd.OutOrStdout(), images, printers.Options{})
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the image IDs (sha256:...), each once")
	return cmd
}

// newPSCommand is podvisor ps, as crictl ps.
func newPSCommand(g *globalOptions) *cobra.Command {
	o := printers.Options{}
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "list the containers with their IDs, as crictl ps does (-a: exited ones too)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := g.client()
			if err != nil {
				return err
			}
			list, err := client.Pods(cmd.Context())
			if err != nil {
				return err
			}
			return printers.PS(cmd.OutOrStdout(), list.Items, o, time.Now())
		},
	}
	cmd.Flags().BoolVarP(&o.All, "all", "a", false, "every container, exited and created ones too, not only the running ones")
	return cmd
}
