// The tfpgo tab: a run list, the chosen run's report and files, a diff of two runs.
// TensorBoard loads this module in an iframe whose base is /data/plugin/tfpgo/.
export async function render() {
  const runs = await (await fetch('runs')).json();
  document.body.style.fontFamily = 'Roboto, sans-serif';
  document.body.style.margin = '0';
  const bar = document.createElement('div');
  bar.style.padding = '8px';
  const select = (label) => {
    const element = document.createElement('select');
    element.setAttribute('aria-label', label);
    for (const {run} of runs) {
      const option = document.createElement('option');
      option.value = option.textContent = run;
      element.appendChild(option);
    }
    return element;
  };
  const run = select('run');
  const other = select('compare with');
  const compare = document.createElement('button');
  compare.textContent = 'diff';
  const links = document.createElement('span');
  links.id = 'tfpgo-files';
  bar.append('run ', run, ' ', links, ' compare with ', other, ' ', compare);
  const frame = document.createElement('iframe');
  frame.id = 'tfpgo-report';
  frame.style.cssText = 'border:0;width:100%;height:calc(100vh - 48px)';
  const file = (name, path) =>
    `file?run=${encodeURIComponent(name)}&path=${encodeURIComponent(path)}`;
  const show = () => {
    const chosen = run.value;
    frame.src = file(chosen, 'report.html');
    links.replaceChildren();
    for (const name of runs.find((r) => r.run === chosen).files) {
      const link = document.createElement('a');
      link.href = file(chosen, name);
      link.target = '_blank';
      link.textContent = name;
      links.append(link, ' ');
    }
  };
  run.addEventListener('change', show);
  compare.addEventListener('click', () => {
    frame.src = `diff?a=${encodeURIComponent(run.value)}&b=${encodeURIComponent(other.value)}`;
  });
  document.body.append(bar, frame);
  if (runs.length) {
    if (runs.length > 1) other.selectedIndex = 1;
    show();
  } else {
    frame.replaceWith('No pgo output under this logdir: run bazel run //:pgo -- --output-dir <logdir>/<run>.');
  }
}
