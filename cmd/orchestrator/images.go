package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
)

// imagesCmd is `orchestrator images list|show|sync`: the design's OS
// images per Site and their syncs into the Sites' provisioners
// (/api/v1/images).
func (a *app) imagesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "The design's OS images per Site: synced or not, which nodes deploy each; sync them into the provisioners",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.imagesListCmd(), a.imagesShowCmd(), a.imagesSyncCmd())
	return cmd
}

func (a *app) imagesListCmd() *cobra.Command {
	var sf stateFlags
	var output, site string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the design's images per Site: provisioner name, architecture, sha256, size, state, progress, nodes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				im, err := s.c.Images(cmd.Context(), site)
				if err != nil {
					return apiErr(err)
				}
				return a.emit(output, im, func() error { return printImages(a.stdout, im.Images) })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&site, "site", "", "only this Site's images")
	return cmd
}

func (a *app) imagesShowCmd() *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show one Image document in each Site whose nodes deploy it, with its sync's error if it failed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				im, err := s.c.Image(cmd.Context(), args[0])
				if err != nil {
					return apiErr(err)
				}
				return a.emit(output, im, func() error { return printImageDetail(a.stdout, im.Images) })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) imagesSyncCmd() *cobra.Command {
	var ef engineFlags
	var req apitypes.ImageSyncRequest
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Sync the design's images into the Sites' provisioners (a sync_images task), with a progress bar per Site",
		Long: "Starts a sync_images task: each Image document into each Site whose nodes deploy it (or only --site, --image).\n" +
			"A custom image is verified here first (its SHA-256 and size): a wrong one is refused before the provisioner sees a byte.\n" +
			"It is then uploaded in chunks from what the provisioner holds, so a sync interrupted (serve restarted) resumes.\n" +
			"Exit status: 0 when every sync completed, 1 when one failed (the reason is printed), 2 when the server could not be asked.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.syncImages(cmd.Context(), &ef, req)
		},
	}
	ef.add(cmd, true)
	cmd.Flags().StringVar(&req.Site, "site", "", "only this Site")
	cmd.Flags().StringVar(&req.Image, "image", "", "only this Image document")
	return cmd
}

// syncImages starts the task and follows it, drawing each image's
// progress in each Site until the task ends.
func (a *app) syncImages(ctx context.Context, ef *engineFlags, req apitypes.ImageSyncRequest) error {
	output, err := checkOutput(ef.output)
	if err != nil {
		return err
	}
	s, err := a.connect(ctx, &ef.stateFlags, runEngine)
	if err != nil {
		return err
	}
	defer s.close()
	t, err := s.c.SyncImages(ctx, req)
	if err != nil {
		return apiErr(err)
	}
	if ef.noWait {
		fmt.Fprintf(a.stdout, "task %s stored: the server syncs the images (follow it with `orchestrator wait %s`)\n", t.ID, t.ID)
		return nil
	}
	changed := watchTask(ctx, s.c, t.ID)
	bars := imageBars{w: a.stderr, last: map[string]string{}}
	var trouble time.Time
	for {
		td, err := s.c.Task(ctx, t.ID)
		switch {
		case ctx.Err() != nil:
			return stoppedFollowing(s, t.ID)
		case err != nil:
			if err := a.taskTrouble(err, &trouble, t.ID); err != nil {
				return err
			}
		default:
			trouble = time.Time{}
			a.drawImageBars(ctx, s.c, &bars, req, t.ID)
			if td.Status.Finished() {
				return a.taskEnd(td, output)
			}
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-time.After(followPoll):
		}
	}
}

// drawImageBars prints the bar of each image sync of the task that moved
// since it was last drawn: a row naming the task (the engine names the
// last task that asked for a sync), or any sync running in the task's
// scope (one the task joined, before its next record names it).
func (a *app) drawImageBars(ctx context.Context, c *client.Client, b *imageBars, req apitypes.ImageSyncRequest, task string) {
	im, err := c.Images(ctx, req.Site)
	if err != nil {
		return // best effort: the task's end says what happened
	}
	for _, st := range im.Images {
		if (req.Image == "" || st.Image == req.Image) && (st.Task == task || st.State == "syncing" || st.State == "pending") {
			b.draw(st)
		}
	}
}

// imageBars draws one line per image and Site when its state or its
// progress (by whole 5%) changed.
type imageBars struct {
	w    io.Writer
	last map[string]string
}

const barWidth = 30

func (b *imageBars) draw(st apitypes.ImageSite) {
	n := min(max(int(st.Progress*barWidth/100), 0), barWidth)
	line := fmt.Sprintf("%-12s %-20s [%s%s] %5.1f%% %s", st.Site, st.Image, strings.Repeat("#", n), strings.Repeat("-", barWidth-n), st.Progress, st.State)
	if st.Error != "" {
		line += ": " + printable(st.Error)
	}
	key := st.Site + "/" + st.Image
	mark := fmt.Sprintf("%s %d", st.State, int(st.Progress)/5)
	if b.last[key] == mark {
		return
	}
	b.last[key] = mark
	fmt.Fprintln(b.w, line)
}

// printImages is the list's table.
func printImages(w io.Writer, ims []apitypes.ImageSite) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SITE\tIMAGE\tPROVISIONER NAME\tARCH\tCUSTOM\tSHA256\tSIZE\tSTATE\tPROGRESS\tNODES")
	for _, im := range ims {
		sum := im.SHA256
		if len(sum) > 12 {
			sum = sum[:12]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\t%d\t%s\t%.0f%%\t%s\n", im.Site, im.Image, im.Name, im.Architecture, im.Custom,
			orDash(sum), im.Size, im.State, im.Progress, nodeCount(im.Nodes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var said []string
	for _, im := range ims {
		if im.ProvisionerError != "" && !slices.Contains(said, im.Site) {
			said = append(said, im.Site)
			fmt.Fprintf(w, "note: %s\n", printable(im.ProvisionerError))
		}
	}
	return nil
}

// printImageDetail shows each Site's row of one image in full.
func printImageDetail(w io.Writer, ims []apitypes.ImageSite) error {
	for i, im := range ims {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "image %s in site %s: %s (%s)\n", im.Image, im.Site, im.Name, im.Architecture)
		if im.Custom {
			fmt.Fprintf(w, "  custom: sha256 %s, %d bytes\n", im.SHA256, im.Size)
		}
		fmt.Fprintf(w, "  state: %s, %.1f%%", im.State, im.Progress)
		if im.Task != "" {
			fmt.Fprintf(w, " (task %s, %s)", im.Task, im.Updated.Format(time.RFC3339))
		}
		fmt.Fprintln(w)
		if im.Resumed > 0 {
			fmt.Fprintf(w, "  resumed from %d bytes the provisioner held\n", im.Resumed)
		}
		if im.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", printable(im.Error))
		}
		if im.ProvisionerError != "" {
			fmt.Fprintf(w, "  provisioner: %s\n", printable(im.ProvisionerError))
		}
		fmt.Fprintf(w, "  nodes: %s\n", orDash(strings.Join(im.Nodes, ", ")))
	}
	if len(ims) == 0 {
		fmt.Fprintln(w, "no node of the design deploys it")
	}
	return nil
}

func nodeCount(nodes []string) string {
	switch len(nodes) {
	case 0:
		return "-"
	case 1, 2, 3:
		return strings.Join(nodes, ",")
	}
	return fmt.Sprintf("%s,... (%d)", strings.Join(nodes[:2], ","), len(nodes))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
