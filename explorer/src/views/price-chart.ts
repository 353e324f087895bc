// The OHLC chart of an asset's price (GET /api/v1/price/{id}/history) over a chosen interval, drawn
// with lightweight-charts in a box of fixed height, so nothing moves while candles load.
import {
  CandlestickSeries,
  createChart,
  type IChartApi,
  type ISeriesApi,
  type UTCTimestamp,
} from 'lightweight-charts';
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import type { Session } from '../auth/session.ts';
import { h, replace, uid } from '../ui/dom.ts';
import { formatTime } from '../ui/format.ts';
import { problemBox } from '../ui/problem-view.ts';

type Interval = Schemas['PriceInterval'];
type Candle = Schemas['Candle'];

/** How far back each interval looks: well within the API's 1000-candle limit. */
const RANGES: Record<Interval, { label: string; spanMs: number }> = {
  '1m': { label: '1 minute candles, last 6 hours', spanMs: 6 * 3600_000 },
  '1h': { label: '1 hour candles, last 7 days', spanMs: 7 * 24 * 3600_000 },
  '1d': { label: '1 day candles, last year', spanMs: 365 * 24 * 3600_000 },
};

/** Enough decimals to show the finest price of the range (the API sends decimal strings). */
function precisionOf(candles: Candle[]): number {
  let decimals = 2;
  for (const candle of candles) {
    for (const value of [candle.open, candle.high, candle.low, candle.close]) {
      decimals = Math.max(decimals, value.split('.')[1]?.length ?? 0);
    }
  }
  return Math.min(decimals, 10);
}

export interface PriceChart {
  element: HTMLElement;
  reload(): void;
  destroy(): void;
}

export function priceChart(
  session: Session,
  assetId: string,
  currency: () => string,
  signal: AbortSignal,
): PriceChart {
  const selectId = uid('interval');
  const interval = h(
    'select',
    { id: selectId, name: 'interval' },
    (Object.keys(RANGES) as Interval[]).map((value) =>
      h('option', { value, selected: value === '1h' }, RANGES[value].label),
    ),
  );
  const canvasBox = h('div', {
    class: 'chart-box',
    'data-testid': 'price-chart',
    role: 'img',
    'aria-label': 'Price chart',
  });
  const overlay = h('div', { class: 'chart-overlay', 'aria-live': 'polite' }, 'Loading prices…');
  const summary = h('p', { class: 'muted small chart-summary' });
  const element = h(
    'div',
    { class: 'price-chart' },
    h('div', { class: 'field inline' }, h('label', { for: selectId }, 'Interval'), interval),
    h('div', { class: 'chart-frame' }, canvasBox, overlay),
    summary,
  );

  let chart: IChartApi | null = null;
  let series: ISeriesApi<'Candlestick'> | null = null;
  let generation = 0;

  const ensureChart = () => {
    if (chart && series) return series;
    chart = createChart(canvasBox, {
      autoSize: true,
      layout: { background: { color: 'transparent' }, textColor: '#3b4252', attributionLogo: false },
      grid: { vertLines: { color: '#eceff4' }, horzLines: { color: '#eceff4' } },
      timeScale: { timeVisible: true, secondsVisible: false },
    });
    series = chart.addSeries(CandlestickSeries, {});
    return series;
  };

  async function load(): Promise<void> {
    const current = ++generation;
    const choice = interval.value as Interval;
    const to = new Date();
    const from = new Date(to.getTime() - RANGES[choice].spanMs);
    overlay.hidden = false;
    overlay.textContent = 'Loading prices…';
    try {
      const history = unwrap(
        await session.api.GET('/api/v1/price/{id}/history', {
          params: {
            path: { id: assetId },
            query: { interval: choice, from: from.toISOString(), to: to.toISOString(), currency: currency() },
          },
          signal,
        }),
      );
      if (current !== generation) return;
      canvasBox.dataset.candles = String(history.candles.length);
      const candleSeries = ensureChart();
      const precision = precisionOf(history.candles);
      candleSeries.applyOptions({ priceFormat: { type: 'price', precision, minMove: 10 ** -precision } });
      candleSeries.setData(
        history.candles.map((candle) => ({
          time: (Date.parse(candle.start) / 1000) as UTCTimestamp,
          open: Number(candle.open),
          high: Number(candle.high),
          low: Number(candle.low),
          close: Number(candle.close),
        })),
      );
      chart?.timeScale().fitContent();
      overlay.hidden = history.candles.length > 0;
      overlay.textContent = history.candles.length > 0 ? '' : `No ${history.currency} price in this range.`;
      summary.textContent = `${history.candles.length} candles in ${history.currency}, ${formatTime(history.from)} to ${formatTime(history.to)}.`;
    } catch (error) {
      if (signal.aborted || current !== generation) return;
      overlay.hidden = false;
      replace(overlay, problemBox(problemOf(error)));
    }
  }

  interval.addEventListener('change', () => void load());
  void load();
  return {
    element,
    reload: () => void load(),
    destroy: () => chart?.remove(),
  };
}
